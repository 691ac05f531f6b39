-- expect: runtime: sandbox held
-- Every way out we know of. Each attempt is caught; any that works makes the script return
-- normally (and a policy would approve), which the test reports as an escape.
local attempts = {
  io = function() return io.open("/etc/passwd") end,
  os_execute = function() return os.execute("true") end,
  os_getenv = function() return os.getenv("HOME") end,
  debug = function() return debug.getinfo(1) end,
  load = function() return load("return 1") end,
  loadstring = function() return loadstring("return 1")() end,
  dofile = function() return dofile("/etc/passwd") end,
  require = function() return require("io") end,
  string_dump = function() return string.dump(function() end) end,
  string_metatable = function() return getmetatable("").__index.dump end,
  string_metatable_write = function() getmetatable("").__index = {} return true end,
  setfenv = function() return setfenv(1, {}) end,
  getfenv = function() return getfenv(1) end,
  rawset = function() return rawset(_G, "x", 1) end,
  collectgarbage = function() return collectgarbage("count") end,
  coroutine = function() return coroutine.create(function() end) end,
  jit = function() return jit.on() end,
  ffi = function() return ffi end,
  package = function() return package.loaded end,
  newproxy = function() return newproxy(true) end,
  global_write = function() x = 1 return true end,
  library_write = function() string.find = nil return true end,
}
return function()
  local escaped = {}
  for name, attempt in pairs(attempts) do
    local ok, value = pcall(attempt)
    if ok and value ~= nil then escaped[#escaped + 1] = name end
  end
  if #escaped > 0 then return "escaped: " .. table.concat(escaped, ", ") end
  error("sandbox held", 0)
end
