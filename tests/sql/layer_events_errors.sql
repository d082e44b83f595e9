-- layer_events: errors name the function and what is wrong.
-- error: layer_events: no such file or directory: '${SOURCE_DIR}/tests/data/events/nope'
SELECT * FROM layer_events('${SOURCE_DIR}/tests/data/events/nope');
-- error: layer_events: no file matches the pattern '${SOURCE_DIR}/tests/data/events/*.json'
SELECT * FROM layer_events('${SOURCE_DIR}/tests/data/events/*.json');
-- Only regular files are read: a device named as the path never ends (/dev/zero, /dev/urandom).
-- error: layer_events: argument 'path' names a character device, not a regular file: '/dev/zero'
SELECT * FROM layer_events('/dev/zero');
-- error: layer_events: argument 'path' names a character device, not a regular file: '/dev/urandom'
SELECT count(*) FROM layer_events('/dev/urandom');
-- error: layer_events: missing required argument 'path'
SELECT * FROM layer_events;
-- error: layer_events: argument 'path' is NULL
SELECT * FROM layer_events(NULL);
-- error: unsafe use of virtual table "layer_events"
CREATE VIEW stored_events AS SELECT * FROM layer_events('${SOURCE_DIR}/tests/data/events/job1');
SELECT count(*) FROM stored_events;
-- error: unsafe use of virtual table "layer_events"
CREATE TABLE log(x);
CREATE TRIGGER log_events AFTER INSERT ON log BEGIN
  INSERT INTO log SELECT layer FROM layer_events('${SOURCE_DIR}/tests/data/events/job1');
END;
INSERT INTO log VALUES (1);
