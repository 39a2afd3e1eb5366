-- spillway: the readiness probe (Store::probe, docs/SPEC.md §4 serve): what every check needs of
-- the server, with nothing left behind. It runs as a script (EVALSHA, EVAL after NOSCRIPT) on an
-- authenticated connection, and writes its key, so that whatever refuses a check's write refuses
-- it too (READONLY on a replica, NOPERM, MISCONF, OOM); the key is deleted in the same atomic
-- step, so no other client ever sees it. A standalone script.
--
-- KEYS     the probe's key ("<prefix>:readiness-probe")
-- Returns  1
redis.call('SET', KEYS[1], '1', 'PX', 1000)
redis.call('DEL', KEYS[1])
return 1
