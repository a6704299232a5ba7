"""``detlint.apply()`` in-process and ``detlint run`` before the interpreter starts."""
