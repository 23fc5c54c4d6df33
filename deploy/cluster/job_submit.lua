--[[
The class partition's rule: each learner runs at most ONE job there at a time (their server).

Slurm's MaxJobsPerUser needs accounting (slurmdbd and a database), which many clusters do
not give a class partition. This job_submit/lua script needs nothing else: every job
submitted to the class partition (sbatch, srun, salloc; by the hub for a learner's server,
or by a learner from a terminal) is named "mha-USER" and made a singleton
(--dependency=singleton: it starts only once no other job of that name and user runs). So a
learner who submits 15 jobs still holds one job's share of the partition; the rest wait
PENDING (Dependency) and never keep another learner's server from starting. A learner
cannot rename such a job or drop its dependency afterwards (scontrol update is refused).

Install: copy this file beside slurm.conf and set JobSubmitPlugins=lua (deploy/cluster/sim.py
does, in its slurm.conf.in). Set CLASS_PARTITION to the class's partition.
--]]

CLASS_PARTITION = "class"

local function in_class(partition)
   if partition == nil or partition == "" then
      -- no partition named: the default one, which in the simulated cluster is the class's
      return DEFAULT_IS_CLASS
   end
   for name in string.gmatch(partition, "[^,]+") do
      if name == CLASS_PARTITION then
         return true
      end
   end
   return false
end

DEFAULT_IS_CLASS = true

function slurm_job_submit(job_desc, part_list, submit_uid)
   if in_class(job_desc.partition) then
      local who = job_desc.user_name or tostring(submit_uid)
      job_desc.name = "mha-" .. who
      job_desc.dependency = "singleton"
   end
   return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
   if modify_uid ~= 0 and (job_desc.name ~= nil or job_desc.dependency ~= nil or job_desc.partition ~= nil) then
      slurm.log_user("the class partition's jobs keep their name, dependency and partition")
      return slurm.ERROR
   end
   return slurm.SUCCESS
end

slurm.log_info("mha class job_submit.lua loaded: one running job per learner in partition %s", CLASS_PARTITION)
return slurm.SUCCESS
