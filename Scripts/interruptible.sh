# Sourced by the scripts that run `swift test` more than once (sanitized-tests, trait-tests): `run COMMAND…` runs
# one in the background and waits for it, so that a SIGINT to the script (Ctrl-C, or `timeout -s INT`) reaches the
# run under way, as it would reach `swift test` in the foreground: SwiftPM then stops the test binary it started in
# a process group of its own, which a SIGTERM to SwiftPM would leave running.
child=
stop() {
    [ -n "$child" ] && kill -INT "$child" 2>/dev/null && wait "$child"
    exit "$1"
}
trap 'stop 130' INT
trap 'stop 143' TERM
run() {
    "$@" &
    child=$!
    wait "$child"
    local status=$?
    child=
    return "$status"
}
