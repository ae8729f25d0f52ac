/**
 * The Redis side of rate control: three Lua scripts over two keys of `harvestKeys`, the model
 * (`rate`, a hash) and the log of the pool's calls (`rateLog`, a sorted set: member -> when
 * the call goes, ms). Times are Redis's own clock (`TIME`), so workers on hosts whose clocks
 * differ still agree. What the fields mean is decided in src/queue/rate/model.ts; these scripts
 * only count.
 *
 * Admission modes (hash field `mode`):
 * - `open`: every call goes; it is logged.
 * - `window`: `count` calls of `limit` went in the window ending at `end`. Once `end` has
 *   passed, the next call opens a new window: one `windowMs` later when windows are `aligned`
 *   to the clock, else ending `windowMs + guardMs` after that call (a service that counts from
 *   a window's first request is never overtaken). Its count starts with the calls of the last
 *   `carryMs` before the old end (the service may count them in its new window). For its first
 *   `probeMs` only `PROBE_CALLS` calls go: should the service still refuse (its window has not
 *   reset, or it is no fixed window), a few calls meet 429 instead of the whole pool.
 * - `log`: at most `limit` calls in any `windowMs + guardMs`; a call over it is scheduled
 *   when the oldest one that must leave has left.
 * - `pace`: one call every `intervalMs`, from `tat` (the next free moment) on.
 * Whatever the mode, no call goes before `holdUntil` (a 429's wait, see `HOLD`).
 * A call scheduled more than ARGV[1] ms ahead is not admitted: its worker holds instead.
 *
 * The model and log are those of one API key (`rateOf` in src/queue/names.ts). A run's own
 * `run.rateLimitPerMinute` is counted apart, in its log (`RUN_ADMIT`), and paces that run alone.
 */

/** Calls that open a fixed window before the others follow (see `window` above). */
export const PROBE_CALLS = 4;

/**
 * The admission, up to its answer: returns early when the call is not admitted, else leaves its
 * turn in `at` (Redis's ms; `now` is the present) and the model's version in `version`.
 */
const ADMIT_STEPS = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local f = redis.call('HMGET', KEYS[1], 'mode', 'limit', 'windowMs', 'guardMs', 'carryMs',
  'end', 'count', 'intervalMs', 'tat', 'version', 'aligned', 'probeMs', 'probeEnds', 'probeCap',
  'holdUntil')
local mode = f[1] or 'open'
local limit = tonumber(f[2]) or 0
local span = (tonumber(f[3]) or 60000) + (tonumber(f[4]) or 0)
local version = tonumber(f[10]) or 0
local maxHold = tonumber(ARGV[1])
local holdUntil = tonumber(f[15]) or 0
if now < holdUntil then return {0, holdUntil - now, version} end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - span)
local at = now
if mode == 'window' then
  local ends = tonumber(f[6]) or 0
  local count = tonumber(f[7]) or 0
  local probeEnds = tonumber(f[13]) or 0
  local probeCap = tonumber(f[14]) or 0
  if now >= ends then
    count = redis.call('ZCOUNT', KEYS[2], ends - (tonumber(f[5]) or 0), '+inf')
    if f[11] == '1' then
      local w = tonumber(f[3])
      ends = ends + w * (math.floor((now - ends) / w) + 1)
    else
      ends = now + span
    end
    probeEnds = now + (tonumber(f[12]) or 0)
    probeCap = count + ${PROBE_CALLS}
    redis.call('HSET', KEYS[1], 'end', ends, 'count', count, 'probeEnds', probeEnds,
      'probeCap', probeCap)
  end
  if count >= limit then return {0, ends - now, version} end
  if now < probeEnds and count >= probeCap then return {0, probeEnds - now, version} end
  redis.call('HINCRBY', KEYS[1], 'count', 1)
elseif mode == 'log' then
  local n = redis.call('ZCARD', KEYS[2])
  if n >= limit then
    local leaving = redis.call('ZRANGE', KEYS[2], n - limit, n - limit, 'WITHSCORES')
    at = math.max(now, tonumber(leaving[2]) + span)
  end
elseif mode == 'pace' then
  at = math.max(now, tonumber(f[9]) or now)
end
if at - now > maxHold then return {0, at - now, version} end
if mode == 'pace' then redis.call('HSET', KEYS[1], 'tat', at + (tonumber(f[8]) or 0)) end
local seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
redis.call('ZADD', KEYS[2], at, string.format('%d:%d', at, seq))
redis.call('PEXPIRE', KEYS[2], span + maxHold + tonumber(ARGV[2]))
`;

/**
 * KEYS: model, log. ARGV: longest in-process wait (ms), how long an idle log lives (ms).
 * Returns `{admitted (0|1), wait ms, model version}`.
 */
export const ADMIT = `${ADMIT_STEPS}return {1, at - now, version}`;

/**
 * ADMIT, then `claim` (Lua) when the call may go at once, in the same script: what must hold
 * exactly when the call is sent (a budget reservation, a journal entry) costs no round trip of
 * its own, and is never left behind by a call that was not admitted. `claim` reads its keys
 * from KEYS[3] and its arguments from ARGV[3] on, and returns
 * `{1, 0, version, outcome}` with an outcome of its own above 0.
 * Returns `{admitted (0|1), wait ms, model version, outcome}`; outcome 0 (or absent): `claim`
 * did not run (the call was not admitted, or must wait for its turn).
 */
export function admitThen(claim: string): string {
  return `${ADMIT_STEPS}if at > now then return {1, at - now, version, 0} end
${claim}`;
}

/** KEYS: model. Returns `{now ms, [field, value, ...]}`. */
export const READ = `
local t = redis.call('TIME')
return {tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), redis.call('HGETALL', KEYS[1])}`;

/**
 * KEYS: model. ARGV: the version the new fields were computed from, time to live (ms), then
 * field, value pairs. Writes only if the version is still the same (1), else 0. `tat` never
 * moves back: calls already scheduled keep their places.
 */
export const WRITE = `
local current = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if current ~= tonumber(ARGV[1]) then return 0 end
for i = 3, #ARGV, 2 do
  local value = ARGV[i + 1]
  if ARGV[i] == 'tat' then
    value = math.max(tonumber(value), tonumber(redis.call('HGET', KEYS[1], 'tat') or '0'))
  end
  redis.call('HSET', KEYS[1], ARGV[i], value)
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`;

/**
 * KEYS: model. ARGV: hold ms, why (`HoldCause`), '1' when the hold was capped, the model's time
 * to live (ms). Holds every call of the key until `now + hold` (never shortens a longer hold).
 */
export const HOLD = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local untilMs = now + tonumber(ARGV[1])
if untilMs > tonumber(redis.call('HGET', KEYS[1], 'holdUntil') or '0') then
  redis.call('HSET', KEYS[1], 'holdUntil', untilMs, 'holdWhy', ARGV[2], 'holdCapped', ARGV[3])
end
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], ARGV[4]) end
return untilMs`;

/**
 * A turn of a run's own limit (`run.rateLimitPerMinute`): at most ARGV[1] calls in any ARGV[2]
 * ms. KEYS: the run's log, the run's hold (`<until ms> <limit>` while it is spent, for
 * `status`). ARGV: limit, span ms, longest wait in the worker (ms), how long an
 * idle log lives (ms), a unique token. Returns `{admitted (0|1), wait ms, member}`: an admitted
 * call goes after its wait; `member` names its turn, given back with ZREM when the call does
 * not go after all.
 */
export const RUN_ADMIT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[1])
local span = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - span)
local at = now
local n = redis.call('ZCARD', KEYS[1])
if n >= limit then
  local leaving = redis.call('ZRANGE', KEYS[1], n - limit, n - limit, 'WITHSCORES')
  at = math.max(now, tonumber(leaving[2]) + span)
end
if at - now > tonumber(ARGV[3]) then
  redis.call('SET', KEYS[2], string.format('%d %d', at, limit), 'PX', at - now + 1000)
  return {0, at - now, ''}
end
local member = string.format('%d:%s', at, ARGV[5])
redis.call('ZADD', KEYS[1], at, member)
redis.call('PEXPIRE', KEYS[1], span + tonumber(ARGV[3]) + tonumber(ARGV[4]))
return {1, at - now, member}`;
