-- expect: timeout: deadline of
-- Every deadline error lands inside the inner pcall; the outer loop would call it again.
return function()
  while true do
    pcall(function() while true do end end)
  end
end
