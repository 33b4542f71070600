-- GetTask of an unknown task: every reply must be the TASK_NOT_FOUND error (-32001).
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) bad = 0 end
request = function()
  return wrk.format("POST", "/", {["Content-Type"] = "application/json", ["A2A-Version"] = "1.0"},
    '{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"no-such-task"}}')
end
response = function(status, headers, body)
  if not body:find('-32001', 1, true) then bad = bad + 1 end
end
function done(summary, latency, requests)
  local total = 0
  for _, t in ipairs(threads) do total = total + t:get("bad") end
  io.write(string.format("WRONG %d\n", total))
end
