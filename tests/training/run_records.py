"""Run records as the training tests compare them: without what is not a result."""
import json

# Wall-clock timings, and the checkpoints' SHA-256 (LibTorch's archive layout is not a function of
# the state alone: module names carry a process-wide counter), are not results.
TIMINGS = {"seconds", "stage_seconds", "checkpoints"}


def strip(x):
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if k not in TIMINGS}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x


def load(work, tag):
    """WORK/TAG/run.json without its timings."""
    return strip(json.load(open(f"{work}/{tag}/run.json")))
