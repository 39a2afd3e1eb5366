-- wrk script: POST /v1/check with the seed policy's attributes, over 10,000 client IPs and
-- 1,000 API keys, so the load is not one hot key.
local counter = 0
function request()
  counter = counter + 1
  local ip = string.format("10.%d.%d.%d", counter % 7, math.floor(counter / 251) % 200, counter % 250)
  local body = string.format('{"ip":"%s","api_key":"k%d","endpoint":"/search"}', ip, counter % 1000)
  return wrk.format("POST", "/v1/check", {["Content-Type"] = "application/json"}, body)
end
