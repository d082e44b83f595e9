-- layer_jobs: errors name the function and what is wrong.
-- error: layer_jobs: argument 'path' names a character device, not a regular file: '/dev/zero'
SELECT * FROM layer_jobs('/dev/zero');
-- error: layer_jobs: no such file or directory: '${SOURCE_DIR}/tests/data/jobs/nope'
SELECT * FROM layer_jobs('${SOURCE_DIR}/tests/data/jobs/nope');
-- error: layer_jobs: no file matches the pattern '${SOURCE_DIR}/tests/data/jobs/*.json'
SELECT * FROM layer_jobs('${SOURCE_DIR}/tests/data/jobs/*.json');
-- error: layer_jobs: missing required argument 'path'
SELECT * FROM layer_jobs;
-- error: layer_jobs: argument 'path' is NULL
SELECT * FROM layer_jobs(NULL);
-- error: unsafe use of virtual table "layer_jobs"
CREATE VIEW stored_jobs AS SELECT * FROM layer_jobs('${SOURCE_DIR}/tests/data/jobs');
SELECT count(*) FROM stored_jobs;
-- error: unsafe use of virtual table "layer_jobs"
CREATE TABLE log(x);
CREATE TRIGGER log_jobs AFTER INSERT ON log BEGIN
  INSERT INTO log SELECT job_id FROM layer_jobs('${SOURCE_DIR}/tests/data/jobs');
END;
INSERT INTO log VALUES (1);
