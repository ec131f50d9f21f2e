"""A candidate as the review panel shows it: one HTML block with its text, the original, the target, each check's
verdict and reason, the judge's scores and the notes of its edits (Qt's rich-text subset)."""

from __future__ import annotations

import html
import re
from typing import Any

from engine.verification.checks import residual_of
from widgets.diff_view import diff_html
from widgets.models.candidates_model import edited_field

__all__ = ["candidate_html", "default_required", "show_breaks"]


def show_breaks(escaped: str) -> str:
    """Escaped text with the data's ``<br />`` tags (IMDb) drawn as line breaks."""
    return re.sub(r"&lt;br\s*/?&gt;", "<br>", escaped, flags=re.IGNORECASE)


def default_required() -> list[str]:
    from engine.counterbias.verify import CandidateFilter

    return CandidateFilter().required()


def _yes_no(value: Any) -> str:
    return "—" if value is None else ("yes" if value else "no")


def _edit_notes(edit: dict[str, Any]) -> str:
    """What an edit-mode sentence record says beyond its answer: the opinion words the LLM marked, the spurious
    words it released, the phrase swap that made the edit (escaped HTML, empty when none)."""
    esc = html.escape
    notes = []
    if edit.get("opinion"):
        notes.append("opinion words: " + ", ".join(f"“{esc(o)}”" for o in edit["opinion"]))
    if edit.get("held") and edit.get("hold") == "kept":
        notes.append("spurious opinion words kept, opinion turned around them: " + esc(", ".join(edit["held"])))
    if edit.get("released"):
        why = f" (a try keeping them: {edit['hold']})" if edit.get("held") and edit.get("hold") else ""
        notes.append("released spurious words: " + esc(", ".join(edit["released"]) + why))
    if edit.get("swapped"):
        notes.append("phrase swap: " + "; ".join(f"“{esc(a)}” → “{esc(b)}”" for a, b in edit["swapped"].items()))
    for demo in edit.get("demos") or []:
        source = "your accepted candidate" if demo.get("source") == "accepted" else "imported pair"
        notes.append(f"example shown ({source} {esc(str(demo.get('id', '')))}): “{esc(str(demo.get('sentence', '')))}” "
                     f"→ “{esc(str(demo.get('edited', '')))}”")
    return f"<br><span style='color:#555'>{' · '.join(notes)}</span>" if notes else ""


def candidate_html(candidate: dict[str, Any]) -> str:
    """The detail of one candidate: diff, judge scores, kept words, steps, or its error (escaped)."""
    esc = html.escape
    meta = candidate.get("meta") or {}
    scores = candidate.get("scores") or {}
    original = candidate.get("original") or {}
    status = candidate["status"]
    parts = [f"<p><b>Candidate {int(candidate['id'])}</b> of example {int(candidate['example_id'])}: "
             f"{esc(str(meta.get('original_label') or candidate.get('original_label') or '?'))} → "
             f"<b>{esc(candidate['target_label'])}</b> · <i>{esc(status)}</i>"
             f"{' · sample ' + str(meta.get('sample')) if meta.get('sample') else ''}</p>"]
    if status == "failed":
        error = meta.get("error") or {}
        parts.append(
            "<table cellpadding='4' style='background-color:#fde0e0; border:1px solid #a40000'><tr><td>"
            f"<b>Failed at step “{esc(str(error.get('step', '?')))}”</b><br>{esc(str(error.get('message', '')))}"
            + (f"<br><b>What to do:</b> {esc(str(error['hint']))}" if error.get("hint") else "")
            + f"<br>{'This may pass on a retry: Generate again.' if error.get('retriable') else 'A retry will not help.'}"
            "</td></tr></table>")
    generated = meta.get("generated") or {}
    for field in generated or {edited_field(candidate): None}:
        new = candidate.get(field)
        if new is None:
            continue
        left = (residual_of(meta, scores) or []) if field == "text" else []
        label = str(meta.get("original_label") or "the original label")
        parts.append(f"<p style='color:#555; margin-bottom:0'><b>{esc(field)}</b></p>"
                     f"<p style='font-size:12pt; line-height:140%; margin-top:2px'>"
                     f"{diff_html(original.get(field) or '', new, left, f'the LLM still reads this as {label}')}</p>")
        if left:  # listed too: an edited sentence spans several runs of the diff and is not underlined
            quoted = "<br>".join(f"• “{esc(s)}”" for s in left[:4]) + ("<br>…" if len(left) > 4 else "")
            parts.append(f"<p style='color:#8a4b00'>Still read as {esc(label)} by the LLM (each sentence alone; "
                         f"underlined where unchanged):<br>{quoted}</p>")
        if generated.get(field) not in (None, new):
            parts.append(f"<p style='color:#555'>Edited by you; generated text was: {esc(generated[field])}</p>")
        if field == "text":
            for human in candidate.get("human") or []:
                parts.append(f"<p style='color:#555; margin-bottom:0'><b>Human counterfactual</b> (from "
                             f"{esc(str(human.get('source', '')))})</p><p style='margin-top:2px'>"
                             f"{diff_html(original.get(field) or '', str(human.get('text') or ''))}</p>")
    judge = scores.get("judge") or {}
    if judge:
        rows = "".join(
            f"<tr><td>{esc(name)}</td><td>{esc(str(m.get('label')))}</td>"
            f"<td align='right'>{float(m.get('target_prob', 0)):.2f}</td></tr>"
            for name, m in (judge.get("members") or {}).items())
        parts.append(
            "<p><b>Ensemble judge</b>: predicts <b>" + esc(str(judge.get("predicted"))) + "</b> · flipped to target: "
            f"<b>{_yes_no(judge.get('flipped'))}</b> · left original label: {_yes_no(judge.get('left_original'))}"
            f" · mean P(target) {float(judge.get('target_prob', 0)):.2f}</p>"
            "<table cellspacing='0' cellpadding='3' border='1' style='border-color:#bbb'>"
            "<tr><th align='left'>member</th><th align='left'>label</th><th>P(target)</th></tr>" + rows + "</table>")
    elif status != "failed":
        parts.append("<p style='color:#555'>Not judged (no ensemble members, or judging was skipped).</p>")
    keep = meta.get("keep_words") or []
    if "spurious_kept" in scores:
        missing = scores.get("missing_spurious") or []
        released = scores.get("released_spurious") or []
        kept = (("all kept" if not released else "the others kept; released as opinion words: "
                 + esc(", ".join(released))) if scores["spurious_kept"]
                else "<span style='color:#a40000'>missing: " + esc(", ".join(missing)) + "</span>")
        parts.append(f"<p><b>Spurious words</b> ({esc(', '.join(keep)) or 'none'}): {kept}</p>")
    elif keep:
        parts.append(f"<p><b>Spurious words to keep</b>: {esc(', '.join(keep))}</p>")
    if "passes" in scores:
        parts.append(f"<p><b>Passes the filter</b>: {_yes_no(scores['passes'])}</p>")
    distance = candidate.get("edit_distance")
    if distance is None and status != "failed":
        distance = (meta.get("edit_distance") or {}).get(edited_field(candidate))
    if distance is not None:
        parts.append(f"<p><b>Edit distance</b> to the original: {float(distance):.2f} "
                     "<span style='color:#555'>(share of words changed; human revisions ≈ 0.2)</span></p>")
    guide = meta.get("guide") or {}
    if guide.get("keywords") or guide.get("excerpts"):
        parts.append("<p style='margin-bottom:0'><b>Retrieved (CORE)</b> · keywords offered: "
                     + esc(", ".join(guide.get("keywords") or [])) + "</p><ul style='margin-top:2px'>"
                     + "".join(f"<li><i>{esc(e)}</i></li>" for e in guide.get("excerpts") or []) + "</ul>")
    elif meta.get("mode") == "llm":
        parts.append("<p style='color:#555'>LLM-only edit: no retrieval, no triples (the baseline).</p>")
    repairs = meta.get("repairs") or {}
    if repairs:
        named = {"edit": "sentence repaired", "fresh": "sentence tried afresh", "flip": "half flip repaired",
                 "strong": "stronger prompt", "swap": "opinion phrases swapped",
                 "release": "spurious opinion words released", "remove": "sentence removed", "rewrite": "rewrite repaired",
                 "reconstruct": "reconstruction repaired"}
        parts.append("<p><b>Repairs</b>: " + esc(", ".join(f"{named.get(k, k)} ×{n}" for k, n in repairs.items()))
                     + "</p>")
    steps = []
    for plan in meta.get("fields") or []:
        triples = plan.get("triples") or []
        cats = plan.get("categories") or []
        rewritten = iter(plan.get("rewritten") or [])
        for triple, cat in zip(triples, cats, strict=False):
            if cat == "principal":
                new = next(rewritten, None)
                arrow = f" → {esc(' | '.join(new))}" if new else ""
                steps.append(f"<li>{esc(' | '.join(triple))}{arrow}</li>")
        for e in plan.get("edits") or []:
            new = e.get("new")
            problems = ", ".join(e.get("problems") or [])
            if new:  # used; problems are what its repair fixed ("unmoved": still read as the original label)
                shown = f" → {esc(new)}" + (f" <span style='color:#777'>(after: {esc(problems)})</span>"
                                            if problems else "")
            elif e.get("removed"):
                shown = (" (removed: it still read as the original label after every try, and held no word to "
                         "keep)")
            elif "unmoved, dropped" in (e.get("problems") or []):
                shown = " (edit dropped: it still read as the original label after every try)"
            else:
                shown = f" (not usable: {esc(problems)})"
            steps.append(f"<li>sentence {int(e.get('index', 0)) + 1}: {esc(str(e.get('sentence', '')))}{shown}"
                         f"{_edit_notes(e)}</li>")
        if plan.get("plain"):
            steps.append("<li>left as written: sentence " + ", ".join(str(int(i) + 1) for i in plan["plain"])
                         + " <span style='color:#555'>(a principal word, but read as no label and no opinion word "
                         "marked)</span></li>")
        for a, b in plan.get("gender_swaps") or []:
            steps.append(f"<li>gender swap: {esc(a)} → {esc(b)}</li>")
        if plan.get("fallback"):
            steps.append("<li><i>no principal triple: every non-spurious triple was rewritten</i></li>")
    if steps:
        parts.append("<p style='margin-bottom:0'><b>Rewritten facts</b></p><ul style='margin-top:2px'>"
                     + "".join(steps) + "</ul>")
    return "".join(parts)


#: Generation methods offered: (key, label).
