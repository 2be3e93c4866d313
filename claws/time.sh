#!/bin/sh
# PlanckClaw claw: the current time.
# Called as `time.sh NAME INPUT_JSON`; prints the result on stdout.
#TOOLS:{"name":"get_time","description":"Get the current time as a Unix timestamp and as an ISO-8601 date and time in UTC","input_schema":{"type":"object","properties":{}}}

case "$1" in
    get_time)
        # One `date` call so both forms describe the same instant.
        # shellcheck disable=SC2046
        set -- $(date -u '+%s %Y-%m-%dT%H:%M:%SZ')
        printf 'Unix timestamp: %s\nISO-8601 UTC: %s\n' "$1" "$2"
        ;;
    *)
        printf 'time.sh: unknown tool "%s" (this claw provides get_time)\n' "$1" >&2
        exit 1
        ;;
esac
