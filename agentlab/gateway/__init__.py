"""`agentlab gateway`: run a class on a real model without surprise bills.

One process the instructor runs, with their key in its environment; each learner gets their own
token (never the key), a daily budget and limits, checked before a request goes on; every call is
priced by the kit's price table and kept, with what it asked and answered (for a replay), in one
SQLite file that Ctrl-C or a crash does not lose.
Learners' notebooks run unchanged: they export two lines and the SDK goes to the gateway.

    export ANTHROPIC_API_KEY=sk-ant-...                  # the instructor's key, in the gateway's shell only
    agentlab gateway serve --db class.db --host 0.0.0.0 --port 8766 --log \\
        --map claude-haiku-4-1=claude-haiku-5-5        # optional: a retired id the notebooks still use
    #   prints where it listens, and the instructor's page: http://HOST:8766/dashboard?token=...
    agentlab gateway learner add learner-01 --dollars 2/day --max-tokens 4096 --per-minute 30 \\
        --concurrent 4 --models claude-haiku-5-5,claude-sonnet-5-5 --url http://HOST:8766
    #   prints:  export ANTHROPIC_BASE_URL=http://HOST:8766
    #            export ANTHROPIC_API_KEY=agl-...        (that learner's token)
    agentlab gateway learner list --db class.db
    agentlab gateway learner revoke learner-01 --db class.db
    agentlab gateway learner rotate learner-01 --db class.db   # a new token; the old one stops
    agentlab gateway budget 40/day --db class.db                # the whole class's daily cap
    agentlab gateway report --db class.db > spend.csv           # per learner and model, then the class
    agentlab gateway recordings export learner-01 replays --db class.db   # their calls, for a replay
    agentlab gateway check-models --db class.db                 # model ids the upstream no longer lists

Any server that speaks the Messages API can be the upstream (`--upstream URL`): `agentlab serve`
for a rehearsal offline, a local model's server, or Anthropic's API (the default).

Modules, one idea each: `store` (the SQLite ledger), `limits` (a learner's limits, checked),
`upstream` (the way out, with the key), `server` (the HTTP gateway), `relay` (a stream passed
through, billed once, cut at the budget), `recordings` (each call kept for a replay, and
exported), `models` (check-models), `dashboard` (the spend page), `cli` (the commands).
"""
