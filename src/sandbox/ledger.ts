/**
 * What the sandbox answered and billed, per team, so a test can compare what a client stored
 * with what the service charged. Credits are charged only on 200 answers of API endpoints
 * (a malformed-JSON 200 fault is charged too, as the work was done; a dropped connection is not).
 */

export interface TeamLedger {
  /** Answers by HTTP status, e.g. `{ "200": 12, "429": 3 }`. */
  calls: Record<string, number>;
  /** Connections destroyed without an answer (the `drop` fault). */
  dropped: number;
  /** Sum of `creditsUsed` of the team's 200 answers. */
  creditsCharged: number;
  /** Balance left, per key of the team. */
  creditsRemaining: Record<string, number>;
}

export interface MediaLedger {
  /** Media requests received. */
  requests: number;
  /** Media requests that carried an `Authorization` header (a client leaking its key). */
  withAuthorization: number;
  /** Answers by HTTP status. */
  calls: Record<string, number>;
  /** sha256 (hex) of each file served whole, by file name (`<id>.<ext>`). */
  served: Record<string, string>;
}

export interface LedgerSnapshot {
  teams: Record<string, TeamLedger>;
  /** Answers to requests without a valid key (401), by status. */
  unauthenticated: Record<string, number>;
  media: MediaLedger;
}

export class Ledger {
  private teams = new Map<string, TeamLedger>();
  private unauthenticated: Record<string, number> = {};
  private media: MediaLedger = { requests: 0, withAuthorization: 0, calls: {}, served: {} };

  constructor(private readonly balances: () => Map<string, { team: string; credits: number }>) {}

  private team(team: string): TeamLedger {
    let entry = this.teams.get(team);
    if (!entry) {
      entry = { calls: {}, dropped: 0, creditsCharged: 0, creditsRemaining: {} };
      this.teams.set(team, entry);
    }
    return entry;
  }

  answered(team: string | undefined, status: number, creditsCharged = 0): void {
    if (team === undefined) {
      bump(this.unauthenticated, status);
      return;
    }
    const entry = this.team(team);
    bump(entry.calls, status);
    entry.creditsCharged += creditsCharged;
  }

  dropped(team: string): void {
    this.team(team).dropped += 1;
  }

  mediaRequest(status: number, withAuthorization: boolean): void {
    this.media.requests += 1;
    if (withAuthorization) this.media.withAuthorization += 1;
    bump(this.media.calls, status);
  }

  /** A file whose body went out whole. */
  mediaServed(file: string, sha256: string): void {
    this.media.served[file] = sha256;
  }

  reset(): void {
    this.teams.clear();
    this.unauthenticated = {};
    this.media = { requests: 0, withAuthorization: 0, calls: {}, served: {} };
  }

  snapshot(): LedgerSnapshot {
    const teams: Record<string, TeamLedger> = {};
    for (const [key, { team, credits }] of this.balances()) {
      const entry = this.team(team);
      entry.creditsRemaining[key] = credits;
    }
    for (const [name, entry] of this.teams) {
      teams[name] = structuredClone(entry);
    }
    return {
      teams,
      unauthenticated: { ...this.unauthenticated },
      media: structuredClone(this.media),
    };
  }
}

function bump(counts: Record<string, number>, status: number): void {
  const k = String(status);
  counts[k] = (counts[k] ?? 0) + 1;
}
