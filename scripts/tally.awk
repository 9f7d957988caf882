# Adds up what the test runners in one log say they ran, and prints "P F S" (passed, failed,
# skipped). Knows cargo test ("test result: ok. 12 passed; 0 failed; 3 ignored; ..."),
# pytest's closing line ("39 passed, 2 skipped in 3.21s") and node --test ("# pass 36" or
# "ℹ pass 36", with fail and skipped alike).
function num(line, word,    m) {
  if (match(line, "[0-9]+ " word)) { m = substr(line, RSTART, RLENGTH); sub(" .*", "", m); return m + 0 }
  return 0
}
/test result: / { p += num($0, "passed"); f += num($0, "failed"); s += num($0, "ignored"); next }
/(passed|failed|skipped|error).* in [0-9.]+s/ {
  p += num($0, "passed"); f += num($0, "failed") + num($0, "errors?"); s += num($0, "skipped"); next
}
/^(# |ℹ )pass [0-9]+$/    { p += $NF; next }
/^(# |ℹ )fail [0-9]+$/    { f += $NF; next }
/^(# |ℹ )skipped [0-9]+$/ { s += $NF; next }
END { printf "%d %d %d\n", p, f, s }
