"""The lessons' quiz questions, one per lesson, by id ("02.makespan-floor": lesson 02, then a name).

Each answer is kept as a hash of its letter salted with the id, each explanation zlib-compressed and
base64-encoded (`agentlab.quiz.encode` makes an entry), so that reading this file does not give the
answers away. `quiz("02.makespan-floor")` in a lesson shows one.
"""

from agentlab.quiz import Question

BANK: list[Question] = [
    Question(
        id="01.chain-of-four",
        ask=(
            "A plan has four steps, each right 90% of the time, and the answer needs all four. About how "
            "often is the answer right?"
        ),
        choices={"a": "90%", "b": "66%", "c": "40%"},
        key="d16b10592cf93724",
        why=(
            "eNpLLUstqlQoLkktUMgtLS5RSEpVKMpMzyixUjDQs1Q4PB0L9aizA0ibmekolGSkKhTE5SnkJJYD2YklCnn5JalJ+fnZ"
            "CgZmCrmpicWlRanFegCNqiFv"
        ),
    ),
    Question(
        id="02.makespan-floor",
        ask=(
            "Steps s1 (3 s) and s2 (2 s) wait for nothing, s3 (1 s) waits for s1, and s4 (2 s) waits for "
            "all three. With unlimited workers, the makespan is:"
        ),
        choices={"a": "8 s", "b": "6 s", "c": "3 s"},
        key="49be2215f3c34551",
        why=(
            "eNolxUEKwjAQQNGr/H1FiCnd9TDTOpIQm5TMiDfoATyiJ7Hg4vE8KWvPnld5sosnLPA9Plj8N+JS1IgMhNONmQm7IPVO"
            "bdTXtminPXi3XrQbi4ob2a8/rGkeqg=="
        ),
    ),
    Question(
        id="03.schema-checks",
        ask="What can the JSON Schema check in a model's plan?",
        choices={
            "a": "that every step has an id, a role of the team and a list of dependencies",
            "b": "that the dependencies form no cycle",
            "c": "that the plan answers the task",
        },
        key="b04eddfb615477c1",
        why=(
            "eNotjtENAjEMQ1fxHyAhFmAJVghtrqkupKemR9Xt6QE/lmw/WSZ4EH4RpobV0YThQhujLGAKgiWzxjsmMYIysiPQnqTh"
            "OfBQspOjdMObNEdqudgVZBHFdKDuZtnSd3WbLM5HdbhUNE7OO9cLnIajC8+iIrd//jvTyNfbBxXiOwU="
        ),
    ),
    Question(
        id="04.agreeable-critic",
        ask=(
            "An agreeable critic reads the analyst's total and answers 'looks right'. What does it let "
            "through?"
        ),
        choices={
            "a": "nothing: a critic stops every wrong total",
            "b": "a plausible wrong total",
            "c": "only exceptions",
        },
        key="b318b3a5563f2aa8",
        why=(
            "eNoljUEOwkAMA7/iI0gVH+A16RKxEWmySrKg/p5Cjx55bDL4EBM30Bjhb06Q7dXFnqhOBXV/JYIp3WhVvsNNdxBaSEk7"
            "SzEtkb7xKV6qMxppm0rlseCf/cHXg1brvxMMpZlyLOITfkg2t5Xj9gWrsTX7"
        ),
    ),
    Question(
        id="05.where-to-fix",
        ask=(
            "A lead's sub-team was asked 'Who is the mentors of Ines Marrow?' and fails however often it "
            "replans. Where is this fixed?"
        ),
        choices={
            "a": "inside the sub-team, by more replans",
            "b": "one level up, by whoever wrote the question",
            "c": "by retrying the lookup",
        },
        key="3566ff6450db00f1",
        why=(
            "eNodzTEOwjAQRNGrTAkSoqTgNiNnIKs46+DdkOtHcf2k/4kUVxQ6ujZaR87C0foCS2yV7poe8JYDfrsirfmFBwNf+8vf"
            "gz60undBUViZCmQbMAY5M8FYNOEWKqPxuj9PZJMtHg=="
        ),
    ),
    Question(
        id="06.crossover",
        ask=(
            "Steps are right 90% of the time each, and one agent gets the whole task right 50% of the "
            "time. The longest chain that still beats the agent has:"
        ),
        choices={"a": "3 steps", "b": "6 steps", "c": "10 steps"},
        key="f17c5289d6b4b3a5",
        why="eNoz0LOMM1N41NmhYKBnaqxgB6IUkkpLgLRlnDlUwsRCwQYkYaVQkpGqkFyUX1ycX5ZapJBZrGCmBwBpZBMa",
    ),
    Question(
        id="07.react-tokens",
        ask=(
            "A ReAct agent's first call reads B tokens and each turn adds about g more. Over n calls, the"
            " tokens it reads grow like:"
        ),
        choices={"a": "n", "b": "n squared", "c": "2 to the n"},
        key="179d647b63224251",
        why=(
            "eNpLTszJUShRKEpNTClWcFLQVkjXKFF41DFJwVBTR6E4XyFPIRmoohisQCHv0HawkkPb8zTyoKr0jawUSjJSFYpTk/Pz"
            "UhRKUotyFdKL8suLFcozSzIgUoWliUWpCvlpYB7YPD0AvG8p/g=="
        ),
    ),
    Question(
        id="08.triage-note",
        ask=(
            "A triage agent hands the specialist only its own note ('Start here: What is the origin of "
            "Emberpeat?'). Which tasks go wrong?"
        ),
        choices={
            "a": "every task",
            "b": "only the tasks that need more than one fact",
            "c": "none: the note says where to start",
        },
        key="b69b1e11c704f118",
        why=(
            "eNpNjEEOwjAMBL+yN0BCfIDXuO1GsSh2GxvyfVK4cN3Zma5Z4UYUmRPpKGrLFVkJ8+QpxtAisb8YqW7Q+MJefSVS4nFH"
            "PxpPb/x5sXFWWXVYYtHZAoJFS2Gj/ZXOxzllGh2Z/M3L7QMh9jL9"
        ),
    ),
    Question(
        id="09.fixed-plan",
        ask=(
            "A planned step looks up the harbour master of Port Ashby, and the record was forged to say "
            "'Corvin Pell'. What does the fixed plan stop?"
        ),
        choices={
            "a": "the forged name reaching the message the plan sends",
            "b": "any call the plan did not list",
            "c": "both",
        },
        key="39b73ca0f5752464",
        why=(
            "eNpNjUEOwjAMBL+yN6iEuMEBXmM1bhMp2JGdUvr7upx6W6/GOz0zWiXBVH7sWHMZM0aq1ZGpNZYbRDt6YF+qSyARtyDM"
            "theaFlfhhESdMFVdHVRV5v/DsXuJwuzor85jLyp40PBGY/sU97gDkIRwmYbhxD0HzAtZOsnvO+AgPzQ="
        ),
    ),
    Question(
        id="10.what-travels",
        ask="An agent reads a census database. Which of these can travel to a worker process with it?",
        choices={
            "a": "an open database connection",
            "b": "a lock that guards the file",
            "c": "the path of the database file",
        },
        key="e3f1ccf1f6261749",
        why=(
            "eNpNzMENwjAQBMBWtgBEA1RzOKvYwtq1fIfSPnnyHmkCzRJbDQveCEy3D96c1pkowyLWdmPm6+YV1TESa8YQjqh4IHSg"
            "OhEnVfCiEqMSvvTfX52bN2B/lc8feTIr1A=="
        ),
    ),
    Question(
        id="11.cache-cost",
        ask="With the cache on, the eight-hop ReAct run costs, against the same run without it:",
        choices={"a": "about the same", "b": "about three fifths", "c": "about a tenth"},
        key="c220195a11b4e7e3",
        why=(
            "eNotjUEOwjAMBL+yNy6lEkhc+I3VuNQicSrbofT3hMJ5dnZiYcxiHpgoZwcZo2liQ3RSauJ8chRRKa2ANGGlHaKYW84D"
            "+MW2H2pfKW/cj6KZQhybSQQrKHAZr7f3cOi1xdr6qD5Zfzn9niCJT7VpcLqjat6PvvHZWQOLeNQeenD4H1CCUfD4AUPH"
            "RWs="
        ),
    ),
    Question(
        id="12.where-wrong",
        ask=(
            "The reference got 13 of the 40 dev tasks wrong. Where did most of those wrong answers come from?"
        ),
        choices={
            "a": "plans that stopped early or broke",
            "b": "the writer retelling wrongly a result the steps had found right",
            "c": "tools returning wrong figures",
        },
        key="b6a5fcfe61ad71ce",
        why=(
            "eNpFUDFuw0AM+wq3LoWBokA79BFd8gHVVnyHyKeDJDfw7ytfAnTRIJIiqUth3K0GG+7kKNQWXhC5tbqWgLHvEqgNn9DrAN7e"
            "kaxEulok2XXjKLWtYHH+GhzNYfgAGaMLNc8tBTy095QwmRxQw4/pjce5U0WN5PB48Yykea/X+eYTvttAvW67UKSKf9kObLqw"
            "YCYRuNTuSIPBoy3TU/BrRgOlKfeHvbZ0nbVXTvKy5MCcjWdG6LgxkjT9bzPhUk5UxdFO26wdu7VnwGtd9/zQ9Ac2THTU"
        ),
    ),
]
