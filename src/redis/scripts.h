// The Lua scripts (lua/*.lua, compiled in by cmake/embed_lua.cmake) and their SHA-1 digests for
// EVALSHA.
#pragma once

#include <string>
#include <string_view>

#include "spillway/limit.h"

namespace spillway::redis {

// The complete script text for an algorithm (lua/prelude.lua, lua/<name>.lua, lua/batch.lua).
std::string_view script_source(Algorithm algorithm);

// Lower-case hex SHA-1 of script_source(algorithm), as Redis names it; computed once.
const std::string& script_sha(Algorithm algorithm);

// The all-or-nothing script over several layers (lua/all_or_nothing.lua, with every algorithm).
std::string_view all_or_nothing_script_source();
const std::string& all_or_nothing_script_sha();

// Undoes a reservation of the all-or-nothing script (lua/refund.lua).
std::string_view refund_script_source();
const std::string& refund_script_sha();

// Settles a reservation's record (usage-based limits; lua/settle.lua, with every algorithm's
// decide and settle functions).
std::string_view settle_script_source();
const std::string& settle_script_sha();

// The tenant directory's scripts (lua/tenant_write.lua, tenant_read.lua, tenant_scan.lua;
// src/redis/redis_tenants.h).
std::string_view tenant_write_script_source();
std::string_view tenant_read_script_source();
std::string_view tenant_scan_script_source();
const std::string& tenant_write_script_sha();
const std::string& tenant_read_script_sha();
const std::string& tenant_scan_script_sha();

// The members of an RLQS bucket and their demands (lua/quota_share.lua;
// src/redis/redis_quota_shares.h).
std::string_view quota_share_script_source();
const std::string& quota_share_script_sha();

// Forgets keys' state (Operation::kReset; lua/reset.lua).
std::string_view reset_script_source();
const std::string& reset_script_sha();

// The readiness probe: writes and deletes one key (Store::probe; lua/probe.lua).
std::string_view probe_script_source();
const std::string& probe_script_sha();

}  // namespace spillway::redis
