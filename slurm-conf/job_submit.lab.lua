--[[
job_submit/lua doing what job_submit/gpumem does for a shard-only cluster, so the
submit benchmark (test/bench/submit.sh) compares like with like: find gpu:mem:SIZE in
--gres, refuse what no GPU could hold, rewrite the rest to shard:GiB.
Installed by the lab as /etc/slurm/job_submit.lua; not meant for production.
--]]

-- The largest GPU in the lab (H100, 79 GiB of shards) bounds every request.
local max_gib = 79
local mult = { [""] = 1 / 1024, k = 1 / (1024 * 1024), m = 1 / 1024, g = 1, t = 1024 }

local function rewrite(entry)
	local prefix, size, unit = entry:match("^(gres[:/])gpu:mem:(%d+)(%a*)$")
	if not prefix then
		return entry, nil
	end
	local m = mult[unit:lower()]
	if not m then
		return nil, "gpu:mem:" .. size .. unit .. ": unknown unit; use g or m"
	end
	local gib = math.ceil(tonumber(size) * m)
	if gib < 1 or gib > max_gib then
		return nil, "gpu:mem:" .. size .. unit .. " cannot fit: the largest GPU holds " .. max_gib .. "g"
	end
	return prefix .. "shard:" .. gib, nil
end

function slurm_job_submit(job_desc, part_list, submit_uid)
	local tpn = job_desc.tres_per_node
	if tpn == nil or not tpn:find("gpu:mem:", 1, true) then
		return slurm.SUCCESS
	end
	local out = {}
	for entry in tpn:gmatch("[^,]+") do
		local e, err = rewrite(entry)
		if err then
			slurm.log_user("%s", err)
			return slurm.ERROR
		end
		out[#out + 1] = e
	end
	job_desc.tres_per_node = table.concat(out, ",")
	return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	return slurm.SUCCESS
end

return slurm.SUCCESS
