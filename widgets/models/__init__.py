"""Qt item models over engine data (examples, datasets) and over running jobs."""
