#!/usr/bin/env bash
# Runs the unified spec tests and rewrites the section of COMPATIBILITY.md between
# <!-- unified-summary:start --> and <!-- unified-summary:end --> from target/unified-summary.json,
# so the published numbers always come from a real run.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
summary="target/unified-summary.json"
rm -f "$summary"
# The test run decides pass/fail; the table is written either way, so keep going to show it.
status=0
cargo test --test unified || status=$?
if [ ! -f "$summary" ]; then
    echo "no $summary was written (is ../shared/compat-data present?)" >&2
    exit 1
fi
python3 - "$summary" COMPATIBILITY.md <<'PY'
import json, sys
summary_path, doc_path = sys.argv[1], sys.argv[2]
data = json.load(open(summary_path))
cols = [("files", "files"), ("tests", "tests"), ("passed", "passed"),
        ("expected_failures", "expected failures"),
        ("unexpected_failures", "unexpected failures"),
        ("skipped_requirement", "skipped: requirements"),
        ("skipped_unsupported", "skipped: driver/runner")]
lines = ["| area | " + " | ".join(c[1] for c in cols) + " |",
         "|---|" + "---:|" * len(cols)]
for area, row in sorted(data["areas"].items()):
    lines.append(f"| {area} | " + " | ".join(str(row[k] + (row["unexpected_passes"] if k == "unexpected_failures" else 0)) for k, _ in cols) + " |")
t = data["total"]
lines.append("| **total** | " + " | ".join(f"**{t[k] + (t['unexpected_passes'] if k == 'unexpected_failures' else 0)}**" for k, _ in cols) + " |")
lines.append("")
lines.append("Expected failures by the issue that will fix them:")
lines.append("")
lines.append("| issue | tests |")
lines.append("|---|---:|")
for issue, n in sorted(data["expected_failures_by_issue"].items()):
    lines.append(f"| {issue} | {n} |")
if data["skipped_unsupported_reasons"]:
    lines.append("")
    lines.append("Skipped because the Rust driver (or this runner) cannot express the test:")
    lines.append("")
    lines.append("| reason | tests |")
    lines.append("|---|---:|")
    for reason, n in sorted(data["skipped_unsupported_reasons"].items(), key=lambda x: (-x[1], x[0])):
        lines.append(f"| {reason.replace('|', '/')} | {n} |")
block = "\n".join(lines)
doc = open(doc_path).read()
start, end = "<!-- unified-summary:start -->", "<!-- unified-summary:end -->"
if start not in doc or end not in doc:
    sys.exit(f"{doc_path} lacks the {start} / {end} markers")
head, rest = doc.split(start, 1)
_, tail = rest.split(end, 1)
open(doc_path, "w").write(head + start + "\n" + block + "\n" + end + tail)
print(f"updated {doc_path} from {summary_path}")
PY
exit "$status"
