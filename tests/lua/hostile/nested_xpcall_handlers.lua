-- expect: timeout: deadline of
-- Layers of pcall and xpcall whose handlers loop too: none of them may catch the deadline.
return function()
  while true do
    xpcall(function()
      pcall(function()
        xpcall(function() while true do end end, function() while true do end end)
      end)
    end, function() while true do end end)
  end
end
