#!/usr/bin/env bash
# Sourced by the CI scripts that run `pbs-harness test` themselves (vm-cluster.sh, cloud-acceptance.sh), from the
# checkout after `make venv`. `pytest_args_words SCRIPT` puts $PYTEST_ARGS into the array PYTEST_ARGS_WORDS, split
# into words as a shell splits them by the splitter ./acceptance uses (pbs_harness/cli/shell_words.py: quotes
# group, a backslash escapes, the text is never given to eval), so PYTEST_ARGS="-m 'ramp_down and not
# destructive'" is two words. These scripts used to split it at blanks, so such an expression could not go
# through (issue #34). A quote left open exits 2 with the value and the fix, before anything is made.
pytest_args_words() {  # pytest_args_words SCRIPT
  local words why rc=0
  words=$(mktemp)
  why=$(.venv/bin/python -m pbs_harness.cli.shell_words PYTEST_ARGS "${PYTEST_ARGS:-}" 2>&1 >"$words") || rc=$?
  if [ "$rc" != 0 ]; then
    rm -f "$words"
    printf '%s: error: %s\n' "$1" "$why" >&2
    exit "$rc"
  fi
  # shellcheck disable=SC2034 # the sourcing script uses it
  mapfile -d '' -t PYTEST_ARGS_WORDS <"$words"
  rm -f "$words"
}
