#!/bin/sh
# PlanckClaw claw: a short health report of this machine, read from /proc.
# Anything /proc does not offer (another OS, a locked-down container) is
# reported as "unavailable" instead of failing the whole tool.
#TOOLS:{"name":"system_status","description":"Get system uptime, RAM total/free/available, 1-minute load average and process count","input_schema":{"type":"object","properties":{}}}

uptime_text() {
    if [ -r /proc/uptime ] && read -r seconds _ < /proc/uptime; then
        seconds=${seconds%%.*}
        days=$((seconds / 86400))
        hours=$((seconds % 86400 / 3600))
        minutes=$((seconds % 3600 / 60))
        printf '%dd %dh %dm (%s s)' "$days" "$hours" "$minutes" "$seconds"
    else
        printf 'unavailable'
    fi
}

# Prints "total free available" in MiB, with "?" for a missing field.
memory_mib() {
    total='?' free='?' available='?'
    if [ -r /proc/meminfo ]; then
        while read -r key value _; do
            case "$key" in
                MemTotal:) total=$((value / 1024)) ;;
                MemFree:) free=$((value / 1024)) ;;
                MemAvailable:) available=$((value / 1024)) ;;
            esac
        done < /proc/meminfo
    fi
    printf '%s %s %s' "$total" "$free" "$available"
}

load_text() {
    if [ -r /proc/loadavg ] && read -r one _ < /proc/loadavg; then
        printf '%s' "$one"
    else
        printf 'unavailable'
    fi
}

# Counts /proc/<pid> directories with a glob: no fork, no ps.
process_count() {
    count=0
    for entry in /proc/[0-9]*; do
        [ -d "$entry" ] && count=$((count + 1))
    done
    if [ "$count" -gt 0 ]; then printf '%d' "$count"; else printf 'unavailable'; fi
}

case "$1" in
    system_status)
        # shellcheck disable=SC2046
        set -- $(memory_mib)
        printf 'Uptime: %s\n' "$(uptime_text)"
        if [ "$1" = '?' ]; then
            printf 'RAM: unavailable\n'
        else
            printf 'RAM: %s MiB total, %s MiB free, %s MiB available\n' "$1" "$2" "$3"
        fi
        printf 'Load average (1 min): %s\n' "$(load_text)"
        printf 'Processes: %s\n' "$(process_count)"
        ;;
    *)
        printf 'system.sh: unknown tool "%s" (this claw provides system_status)\n' "$1" >&2
        exit 1
        ;;
esac
