#!/usr/bin/env bash
# `make eval`: the retrieval evaluation. Installs the corpus (Git's HTML manual pages from
# Debian's git-doc package) if missing, builds the Worker if needed, then runs
# eval/retrieval.mjs, which starts the Worker on a free port with fresh state, uploads the
# documents in eval/documents.txt and asks the questions in eval/questions.json.
# Output goes to eval-output/. Arguments are passed on to eval/retrieval.mjs.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

EVAL_PACKAGE="${EVAL_PACKAGE:-git-doc}"
EVAL_DOCS_DIR="${EVAL_DOCS_DIR:-/usr/share/doc/git-doc}"
export EVAL_PACKAGE EVAL_DOCS_DIR

installed() {
  dpkg-query -W -f '${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

if ! installed "$EVAL_PACKAGE"; then
  command -v apt-get >/dev/null || die "install Debian's $EVAL_PACKAGE package (or set EVAL_DOCS_DIR)"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  # Refresh the package lists only when they do not know the package yet.
  if ! apt-cache policy "$EVAL_PACKAGE" 2>/dev/null | grep -q 'Candidate: [^(]'; then
    say "Updating the package lists"
    $sudo_cmd apt-get update -qq
  fi
  say "Installing $EVAL_PACKAGE, the evaluation corpus"
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "$EVAL_PACKAGE" >/dev/null
fi

"$ROOT/scripts/setup.sh"
build_worker

cd "$ROOT"
mkdir -p eval-output
if [ $# -gt 0 ]; then
  exec node eval/retrieval.mjs --docs "$EVAL_DOCS_DIR" --out "$ROOT/eval-output" "$@"
fi
# By default every set: the Git pages (search, full answers, two-turn conversations and their
# standalone forms), the French help pages in eval/fr and two shops' help centres, in English
# (eval/support) and French (eval/support-fr) (search, full answers).
say "Retrieval evaluation: Git's manual pages"
node eval/retrieval.mjs --set git --docs "$EVAL_DOCS_DIR" --out "$ROOT/eval-output" \
  --scorer search,answer --conversations eval/conversations.json --unanswerable eval/unanswerable.json
say "Retrieval evaluation: French help pages"
node eval/retrieval.mjs --set fr --docs eval/fr --list eval/fr/documents.txt \
  --questions eval/fr/questions.json --out "$ROOT/eval-output" --scorer search,answer
say "Retrieval evaluation: a shop's help centre (Q&A pairs and pages)"
node eval/retrieval.mjs --set support --docs eval/support --list eval/support/documents.txt \
  --qa eval/support/qa.json --questions eval/support/questions.json --out "$ROOT/eval-output" \
  --scorer search,answer
say "Retrieval evaluation: a French shop's help centre (Q&A pairs and a page)"
node eval/retrieval.mjs --set support-fr --docs eval/support-fr --list eval/support-fr/documents.txt \
  --qa eval/support-fr/qa.json --questions eval/support-fr/questions.json --out "$ROOT/eval-output" \
  --scorer search,answer
