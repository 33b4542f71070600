-- SendMessage with a new messageId on every request: every reply must be a result.
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args)
  bad = 0
  counter = 0
  math.randomseed(os.time() + os.clock() * 1000000)
  prefix = tostring(math.random(1, 1000000000))
end
request = function()
  counter = counter + 1
  local body = '{"jsonrpc":"2.0","id":' .. counter ..
    ',"method":"SendMessage","params":{"message":{"messageId":"m-' .. prefix .. '-' .. counter ..
    '","role":"ROLE_USER","parts":[{"text":"hello"}]}}}'
  return wrk.format("POST", "/", {["Content-Type"] = "application/json", ["A2A-Version"] = "1.0"}, body)
end
response = function(status, headers, body)
  if status ~= 200 or not body:find('"result"', 1, true) then bad = bad + 1 end
end
function done(summary, latency, requests)
  local total = 0
  for _, t in ipairs(threads) do total = total + t:get("bad") end
  io.write(string.format("WRONG %d\n", total))
end
