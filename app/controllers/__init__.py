"""Controllers: each connects one panel to the engine through the session and the job runner.

A controller is built as ``Controller(session, jobs, panel)``. It knows nothing of the main
window or of other controllers: it reads the current project, dataset, example and selection
from :class:`app.session.Session`, runs engine functions with :class:`app.jobs.JobRunner`, and
asks for navigation with its signals (:attr:`PanelController.showExamples`,
:attr:`PanelController.statusMessage`), which the main window connects. An import-linter
contract keeps ``app.controllers`` from importing ``app.main_window``, and another keeps them
independent of each other — except :class:`ReviewController`, which composes the Counterbias tab's
four (LLM settings, corpus, generation, decisions) on its one panel.
"""

from app.controllers.annotation import AnnotationController
from app.controllers.base import PanelController
from app.controllers.corpus import CorpusController
from app.controllers.decisions import DecisionsController
from app.controllers.generation import GenerationController
from app.controllers.llm_settings import LLMSettingsController
from app.controllers.project import ProjectController
from app.controllers.importance import ImportanceController
from app.controllers.report import ReportController
from app.controllers.review import ReviewController
from app.controllers.stats import StatsController

__all__ = ["AnnotationController", "CorpusController", "DecisionsController", "GenerationController", "ImportanceController",
           "LLMSettingsController", "PanelController", "ProjectController", "ReportController", "ReviewController",
           "StatsController"]
