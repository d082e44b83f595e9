-- The statement of JobSharing::read (src/attribution/job_sharing.cpp), which the estimator runs
-- to join jobs that shared a GPU into one system.

-- name: overlapping_pairs
-- Each pair of jobs whose spans on a GPU (not 'cpu') overlap, once (job_a < job_b): the pairs of
-- colocated_spans, found as that view finds them. b starts at most the GPU's longest span
-- before a does (pp_gpu_spans_by_length, one seek; no bound where a span's times are not
-- integers or the difference passes 64 bits), so b is read by a range of its start
-- (pp_gpu_spans_by_start), not as every job of the GPU named after a (the unary +), which on a
-- GPU that ran thousands of jobs one after another paired each with every other.
SELECT a.job_id, b.job_id
  FROM main.pp_gpu_spans AS a JOIN main.pp_gpu_spans AS b ON b.uuid = a.uuid AND +b.job_id > +a.job_id
 WHERE a.uuid <> 'cpu' AND b.uuid <> 'cpu' AND a.first_ns < b.last_ns AND b.first_ns < a.last_ns
   AND b.first_ns >= (SELECT CASE typeof(earliest) WHEN 'integer' THEN earliest ELSE -9e999 END
                        FROM (SELECT a.first_ns - max(CASE WHEN typeof(g.first_ns) = 'integer' AND typeof(g.last_ns) = 'integer'
                                                           THEN g.last_ns - g.first_ns ELSE 9e999 END) AS earliest
                                FROM main.pp_gpu_spans AS g WHERE g.uuid = a.uuid));
