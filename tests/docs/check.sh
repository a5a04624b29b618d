#!/usr/bin/env bash
# The documentation's own checks (ctest docs_check, label docs): the README stays a front door
# (at most 200 lines), no relative link in README.md or docs/ points at a file or a heading
# that is not there, docs/testing.md names every unit program and e2e file, and the user docs
# name the contracts, not the original specifications' numbers ("seed 00N":
# docs/requirements.md is the one map). Usage: check.sh [REPO_ROOT]
set -u
root=${1:-$(dirname "$0")/../..}
cd "$root" || exit 2

exec /usr/bin/python3 - <<'EOF'
import glob, os, re, sys

failures = []
def fail(message):
    failures.append(message)

lines = open("README.md", encoding="utf-8").read().count("\n")
if lines > 200:
    fail(f"README.md has {lines} lines (at most 200)")

def slug(heading):
    # GitHub's anchor for a heading: lower case, punctuation but - and _ dropped, spaces to -.
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")

def anchors(path):
    found, fence = set(), False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fence = not fence
        elif not fence and re.match(r"#{1,6} ", line):
            found.add(slug(line.lstrip("#")))
    return found

files = ["README.md"] + sorted(glob.glob("docs/**/*.md", recursive=True))
for path in files:
    text = re.sub(r"```.*?```", "", open(path, encoding="utf-8").read(), flags=re.S)
    for target in sorted(set(re.findall(r"\]\(([^)\s]+)\)", text))):
        if re.match(r"[a-z]+:", target):
            continue
        name, _, anchor = target.partition("#")
        resolved = os.path.normpath(os.path.join(os.path.dirname(path), name)) if name else path
        if not os.path.exists(resolved):
            fail(f"{path}: dead link {target}")
        elif anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
            fail(f"{path}: no heading #{anchor} in {resolved}")

# docs/testing.md says what each test covers: every unit program and e2e file is named there.
testing = open("docs/testing.md", encoding="utf-8").read() if os.path.exists("docs/testing.md") else ""
for path in sorted(glob.glob("tests/unit/test_*.c")):
    name = os.path.basename(path)[len("test_"):-len(".c")]
    if f"unit_{name}" not in testing:
        fail(f"docs/testing.md does not say what unit_{name} ({path}) covers")
for path in sorted(glob.glob("tests/e2e/*.test.mjs")):
    name = os.path.basename(path)[: -len(".test.mjs")]
    if not re.search(rf"e2e_{name}\b|`{name}`|{name}\.test\.mjs", testing):
        fail(f"docs/testing.md does not say what e2e_{name} ({path}) covers")

user_docs = ["README.md"] + [f"docs/{name}.md" for name in
             ("operations", "configuration", "tools", "mcp", "gateway", "sandbox")]
for path in user_docs:
    if not os.path.exists(path):
        continue
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        if re.search(r"seeds? 00\d", line, re.I):
            fail(f"{path}:{number}: names a specification by number (\"seed 00N\"): name the "
                 f"contract, docs/requirements.md maps them: {line.strip()[:100]}")

# The README's language table is generated from the kernel specs cellgate ships (their
# metadata.cellgate: aliases, kernel_name, implementation, preinstalled), which e2e_image
# checks against the image; CELLGATE_DOCS_WRITE=1 rewrites it.
def language_table():
    import json
    rows = ["| language | kernel | preinstalled |", "|---|---|---|"]
    names = sorted(os.listdir("kernels"), key=lambda n: (n != "python", n))
    for name in names:
        path = os.path.join("kernels", name, "kernel.json")
        if not os.path.exists(path):
            continue
        meta = json.load(open(path))["metadata"]["cellgate"]
        language = meta.get("language", name)
        also = [a for a in meta.get("aliases", []) if a.lower() != language]
        if meta.get("kernel_name", name) != language:
            also.append(meta["kernel_name"])
        said = f"`{language}`" + (" (" + ", ".join(f"`{a}`" for a in also) + ")" if also else "")
        rows.append(f"| {said} | {meta.get('implementation', name)} | "
                    f"{', '.join(meta.get('preinstalled', [])) or 'its standard library'} |")
    rows.append("| `bash` (`sh`, `shell`) | a new `/bin/bash` per call | coreutils, the other "
                "languages' interpreters |")
    return "\n".join(rows) + "\n"

readme = open("README.md", encoding="utf-8").read()
begin, end = "<!-- languages: generated from kernels/*/kernel.json by tests/docs/check.sh -->\n", "<!-- /languages -->"
if begin in readme and end in readme:
    head, rest = readme.split(begin, 1)
    body, tail = rest.split(end, 1)
    want = language_table()
    if body != want:
        if os.environ.get("CELLGATE_DOCS_WRITE") == "1":
            open("README.md", "w", encoding="utf-8").write(head + begin + want + end + tail)
        else:
            fail("README.md's language table differs from kernels/*/kernel.json: run "
                 "CELLGATE_DOCS_WRITE=1 tests/docs/check.sh")
else:
    fail("README.md has no generated language table (" + begin.strip() + ")")

for message in failures:
    print("docs check:", message)
print("docs check:", "ok" if not failures else f"{len(failures)} problem(s)")
sys.exit(1 if failures else 0)
EOF
