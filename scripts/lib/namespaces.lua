-- Which namespaces are for development and which are production, decided in one place so
-- every policy draws the line the same way: by the first and the last word of the name,
-- words being separated by "-".
--
--   tide.lib.namespaces.is_dev("dev-web")    --> true   (dev, dev-*, test, test-*, *-dev, *-test)
--   tide.lib.namespaces.is_prod("prod-web")  --> true   (prod, prod-*, *-prod)

local dev_words = { dev = true, test = true }
local prod_words = { prod = true }

-- Every policy deciding an operation asks about the same namespace: the last one's words
-- are kept. `last_namespace` is set last, so a half-done update is never taken as done.
local last_namespace, last_first, last_last

-- "payments-test" --> "payments", "test"; "dev" --> "dev", "dev"
local function first_and_last_word(namespace)
  namespace = namespace or ""
  if namespace ~= last_namespace then
    last_first = string.match(namespace, "^[^%-]*")
    last_last = string.match(namespace, "^.*%-([^%-]*)$") or last_first
    last_namespace = namespace
  end
  return last_first, last_last
end

local function either_word_in(words, namespace)
  local first, last = first_and_last_word(namespace)
  return words[first] == true or words[last] == true
end

return {
  is_dev = function(namespace) return either_word_in(dev_words, namespace) end,
  is_prod = function(namespace) return either_word_in(prod_words, namespace) end,
}
