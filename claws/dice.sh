#!/bin/sh
# PlanckClaw claw: roll dice.
# Called as `dice.sh roll_dice '{"sides":20,"count":3}'` (both keys optional).
# Bad input is reported on stderr with exit status 1.
#TOOLS:{"name":"roll_dice","description":"Roll dice and return each roll and the total","input_schema":{"type":"object","properties":{"sides":{"type":"integer","minimum":2,"maximum":1000,"default":6,"description":"Faces per die (2 to 1000)"},"count":{"type":"integer","minimum":1,"maximum":100,"default":1,"description":"Number of dice (1 to 100)"}}}}

fail() {
    printf 'roll_dice: %s\n' "$1" >&2
    exit 1
}

# Prints the raw JSON value of top-level-looking key $1 in $2 (empty if the
# key is absent). Good enough for flat inputs such as {"sides":20,"count":3}
# with any spacing or line breaks; no jq needed.
json_value() {
    printf '%s' "$2" | tr '\n\r\t' '   ' |
        sed -n 's/.*"'"$1"'"[[:space:]]*:[[:space:]]*\([^,}]*\).*/\1/p' |
        sed 's/[[:space:]]*$//'
}

# Validates that $2 (named $1) is an integer in [$3, $4] and prints it
# without leading zeros (so sh arithmetic never reads it as octal).
bounded_integer() {
    name=$1 value=$2 low=$3 high=$4
    case "$value" in
        '' | *[!0-9]*) fail "$name must be an integer from $low to $high (got $value)" ;;
    esac
    while :; do
        case "$value" in
            0?*) value=${value#0} ;;
            *) break ;;
        esac
    done
    # Length check first: a huge number would overflow sh arithmetic.
    if [ "${#value}" -gt 4 ] || [ "$value" -lt "$low" ] || [ "$value" -gt "$high" ]; then
        fail "$name must be an integer from $low to $high (got $2)"
    fi
    printf '%s' "$value"
}

# Prints $1 random integers in [0, 65535], whitespace separated: from
# /dev/urandom through od, or awk's generator when that is unavailable.
random_words() {
    words=$(od -An -N"$(($1 * 2))" -tu2 /dev/urandom 2>/dev/null)
    if [ -z "$words" ]; then
        words=$(awk -v n="$1" -v pid="$$" 'BEGIN {
            srand(); seed = srand(); srand(seed + pid)
            for (i = 0; i < n; i++) printf "%d ", int(rand() * 65536)
        }')
    fi
    [ -n "$words" ] || fail "no source of randomness (/dev/urandom or awk)"
    printf '%s' "$words"
}

case "$1" in
    roll_dice) ;;
    *) fail "unknown tool \"$1\" (this claw provides roll_dice)" ;;
esac

input=${2:-"{}"}
raw_sides=$(json_value sides "$input")
raw_count=$(json_value count "$input")
sides=$(bounded_integer sides "${raw_sides:-6}" 2 1000) || exit 1
count=$(bounded_integer count "${raw_count:-1}" 1 100) || exit 1

# Rejection sampling: words at or above the largest multiple of sides would
# make low faces slightly likelier.
limit=$((65536 - 65536 % sides))
rolls=''
total=0
rolled=0
while [ "$rolled" -lt "$count" ]; do
    for word in $(random_words "$((count - rolled))"); do
        [ "$rolled" -lt "$count" ] || break
        [ "$word" -lt "$limit" ] || continue
        roll=$((word % sides + 1))
        rolls="${rolls:+$rolls, }$roll"
        total=$((total + roll))
        rolled=$((rolled + 1))
    done
done

printf 'Rolled %sd%s: %s\nTotal: %s\n' "$count" "$sides" "$rolls" "$total"
