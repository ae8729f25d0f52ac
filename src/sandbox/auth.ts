/**
 * Bearer-key authentication and credit balances. Keys map to teams; each key holds a balance,
 * changed at runtime by charges and by `control.setCredits`.
 */
import type { SandboxKey } from './options.ts';

export interface Account {
  key: string;
  team: string;
  credits: number;
  threatProtection: boolean;
}

export type AuthResult =
  | { ok: true; account: Account }
  | { ok: false; reason: 'missing' | 'invalid' };

export class Accounts {
  /** Key -> account; the map itself is the live balance store. */
  readonly byKey = new Map<string, Account>();

  constructor(keys: readonly SandboxKey[]) {
    for (const k of keys) {
      this.byKey.set(k.key, {
        key: k.key,
        team: k.team,
        credits: k.credits,
        threatProtection: Boolean(k.threatProtection),
      });
    }
  }

  /** Reads `Authorization: Bearer <key>`; no header or an empty token is "missing". */
  authenticate(header: string | undefined): AuthResult {
    const token = bearerToken(header);
    if (!token) return { ok: false, reason: 'missing' };
    const account = this.byKey.get(token);
    return account ? { ok: true, account } : { ok: false, reason: 'invalid' };
  }

  setCredits(key: string, credits: number): void {
    const account = this.byKey.get(key);
    if (!account) throw new Error(`unknown sandbox key`);
    if (!Number.isSafeInteger(credits) || credits < 0) {
      throw new Error(`credits must be a non-negative integer`);
    }
    account.credits = credits;
  }

  /** Takes `credits` from the balance, never below 0. */
  charge(account: Account, credits: number): void {
    account.credits = Math.max(0, account.credits - credits);
  }
}

export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer\s+(.*)$/i.exec(header.trim());
  const token = m?.[1]?.trim();
  return token ? token : undefined;
}
