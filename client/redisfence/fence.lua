-- tenure's fenced Redis write: the token check and the write in one step.
-- KEYS[1]: the fence key, which keeps the highest token written under it;
-- KEYS[2..]: the keys of the guarded command. ARGV[1]: the writer's token,
-- in decimal; ARGV[2]: the command; ARGV[3..]: its other arguments.
-- Returns {0, highest} when a higher token is recorded (nothing written),
-- else {1, the command's reply}.
local function below(a, b)
  -- decimal strings without leading zeros: exact for 64-bit tokens
  if #a ~= #b then return #a < #b end
  return a < b
end
local token = ARGV[1]
local highest = redis.call('GET', KEYS[1])
if highest and below(token, highest) then
  return {0, highest}
end
if not highest or below(highest, token) then
  redis.call('SET', KEYS[1], token)
end
local args = {}
for i = 2, #KEYS do args[#args + 1] = KEYS[i] end
for i = 3, #ARGV do args[#args + 1] = ARGV[i] end
return {1, redis.call(ARGV[2], unpack(args))}
