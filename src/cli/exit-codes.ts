/**
 * harvest's exit codes: the one table every command uses. `harvest --help` prints it from
 * here, and the README's "Exit codes" table says the same.
 *
 * The rule for an invalid pipeline: a checker that finds problems exits 1, as linters do
 * (`validate`, `media verify`); a command given bad input to act on exits 2 (`plan`, `run`,
 * `schedule apply` given an invalid pipeline).
 */
export const EXIT = {
  /** Done as asked. */
  OK: 0,
  /** A checker found problems, a run finished with failed tasks, or an unexpected error. */
  FAILED: 1,
  /** Bad input: a flag, an argument, a file, a pipeline to act on, a setting, an API 400. */
  BAD_INPUT: 2,
  /**
   * The environment refused: the API key (401) or its credits (402), Redis or the API not
   * reachable or failing (5xx, timeouts, 429 once retries are spent), the database unusable
   * (read-only, locked, not a database), a port in use, stdout or an output file failing as it
   * is written (a full disk, an I/O error; not a reader gone away, which is quiet).
   */
  ENVIRONMENT: 3,
  /** Not finished: a run paused, interrupted (Ctrl-C), cancelled or no longer followed; a forced stop. */
  NOT_FINISHED: 4,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** The table as `harvest --help` prints it. */
export const EXIT_CODES_HELP = `
Exit codes:
  0  done as asked
  1  a checker found problems (validate, media verify), a run finished with failed tasks,
     or an unexpected error
  2  bad input: a flag, a file, a pipeline given to plan, run or schedule apply that does not
     validate, a setting, an API 400, an unknown run
  3  the environment refused: the API key (401) or its credits (402), Redis or the API not
     reachable or failing (5xx, timeouts, 429 once retries are spent), the database unusable
     (read-only, locked, not a database), a port in use, stdout or an output file failing
     as it is written (a full disk, an I/O error)
  4  not finished: a run paused, interrupted (Ctrl-C of run while it plans, or of run --wait
     or --local), cancelled, or whose jobs Redis lost; a forced stop (a second Ctrl-C)
With --json, errors too are JSON on stdout: {"ok": false, "error": {"code", "message", "exitCode"}}.`;
