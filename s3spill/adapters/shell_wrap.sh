# Sourced by the command that a harness's shell tool runs once s3spill's before-tool hook
# has rewritten it (Claude Code's Bash, Gemini CLI's run_shell_command; why each step is
# there: s3spill/adapters/claude_bash.py):
#   . shell_wrap.sh 'ORIGINAL COMMAND' PYTHON STORE SESSION SERVER HARNESS TOOL [CALL_ID]
# Runs the original in this very shell (eval: quoting, heredocs, cd, aliases as typed),
# its stdout and stderr appended to a spool file that `s3spill run --follow` reads as it
# grows, detached so that a `wait` in the command does not wait for it; then writes the exit
# status, waits until run printed the model's text, and returns the command's own status.
# Whatever goes wrong on our side, the command still runs and its output still reaches the
# harness: unwrapped if the spool cannot be made, the raw spool if run did not finish.
__s3spill_w_cmd=$1
if __s3spill_w_d=$(mktemp -d 2>/dev/null) && : >"$__s3spill_w_d/o" \
  && ( exec "$2" -m s3spill.cli.run_follow --store "$3" --session "$4" --server "$5" --harness "$6" \
         --tool "$7" ${8:+--call-id "$8"} --follow "$__s3spill_w_d" --watch-pid $$ </dev/null 2>/dev/null &
       echo $! >|"$__s3spill_w_d/p" ) \
  && read -r __s3spill_w_p <"$__s3spill_w_d/p"; then
  __s3spill_w_end() {
    __s3spill_w_rc=$1
    trap - EXIT
    printf '%s\n' "$__s3spill_w_rc" >|"$__s3spill_w_d/rc"
    while [ ! -e "$__s3spill_w_d/done" ] && kill -0 "$__s3spill_w_p" 2>/dev/null; do sleep 0.02; done
    [ -e "$__s3spill_w_d/done" ] || cat "$__s3spill_w_d/o"
    rm -rf "$__s3spill_w_d"
    return "$__s3spill_w_rc"
  }
  trap '__s3spill_w_end $?' EXIT
  set --
  eval "$__s3spill_w_cmd" >>"$__s3spill_w_d/o" 2>&1
  __s3spill_w_end $?
else
  set --
  eval "$__s3spill_w_cmd"
fi
