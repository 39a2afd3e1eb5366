  -- spillway: pasted by the loader after every algorithm's block: the block's write, with a TTL
  -- that ends when the key is idle again (ms, rounded up exactly; at least ttl_floor), so that no
  -- key lives without one. The block sets idle_at (µs) when it wrote or has a state to write; a
  -- string `state` replaces the key (deleted when already idle); without one (the sliding log
  -- wrote its sorted set) only the expiry is set.
  if idle_at then
    local idle_in = idle_at - now
    local ttl = -floor(-idle_in / 1000)
    if ttl * 1000 < idle_in then ttl = ttl + 1 end
    ttl = max(ttl, ttl_floor)
    if not state then
      redis.call('PEXPIRE', key, ttl)
    elseif ttl > 0 then
      redis.call('SET', key, state, 'PX', ttl)
    else
      redis.call('DEL', key)
    end
  end
