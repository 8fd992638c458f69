#!/usr/bin/env python3
"""Each room of the tree includes only the rooms it is declared to use.

A room is a top-level folder with its own library; a header belongs to the room whose folder holds
it. The declared uses are the architecture: the update-rule interface (rules/) is used by the
training core and by the certificate suite, and neither of those includes the other; core/ uses no
other room. Usage: rooms.py SOURCE_DIR. Exit 1 naming every include that crosses undeclared.
"""
import os
import re
import sys

USES = {
    "core": set(),
    "arms": {"core"},
    "rules": {"core"},
    "io": set(),
    "schema": {"core"},
    "properties": {"core"},
    "certificates": {"core", "io", "properties", "rules"},
    "reports": {"core", "arms", "io", "schema"},
    "runner": {"io", "reports"},
    "training": {"core", "arms", "io", "schema", "rules"},
    "cli": {"core", "arms", "io", "schema", "properties", "rules", "certificates", "reports", "runner", "training"},
    "bench": {"core", "arms", "io", "training"},
    "fuzz": {"core", "arms", "io", "schema", "reports", "training"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"](stiefel/[^>"]+)[>"]', re.M)


def main(src):
    owner = {}  # "stiefel/x.h" -> room
    for room in USES:
        for dirpath, _, files in os.walk(os.path.join(src, room)):
            for f in files:
                if not f.endswith(".h"):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, os.path.join(src, room))
                parts = rel.split(os.sep)
                if "stiefel" in parts:
                    key = "/".join(parts[parts.index("stiefel"):])
                    owner.setdefault(key, room)
    bad = []
    for room, uses in USES.items():
        for dirpath, _, files in os.walk(os.path.join(src, room)):
            for f in files:
                if not f.endswith((".h", ".cpp")):
                    continue
                path = os.path.join(dirpath, f)
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
                for m in INCLUDE.finditer(text):
                    dep = owner.get(m.group(1))
                    if dep is None:
                        bad.append(f"{os.path.relpath(path, src)}: includes <{m.group(1)}>, which no room holds")
                    elif dep != room and dep not in uses:
                        bad.append(f"{os.path.relpath(path, src)}: includes <{m.group(1)}> of {dep}/, "
                                   f"which {room}/ does not use (it uses: {', '.join(sorted(uses)) or 'none'})")
    for line in bad:
        print(line)
    print(f"{len(bad)} undeclared includes across {len(USES)} rooms")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: rooms.py SOURCE_DIR")
    sys.exit(main(sys.argv[1]))
