/** The roles a pool can take (no imports: the CLI reads this before loading anything heavy). */
export const ROLES = ['search', 'store', 'runs', 'media'] as const;
export type Role = (typeof ROLES)[number];

/** What each role does, for `harvest worker --help`. */
export const ROLE_HELP: Record<Role, string> = {
  search: 'calls the API (any host that reaches Redis and the API)',
  store:
    'writes SQLite and feeds runs larger than the queue window (the host that owns the database)',
  runs: 'starts scheduled runs and sends their webhooks (the host that owns the database)',
  media: 'saves signed media before it expires (the host that owns the database)',
};
