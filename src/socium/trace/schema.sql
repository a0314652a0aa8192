-- socium trace schema. Every table is append-only; `steps` holds one row per committed step and
-- is written in the same transaction as that step's rows, so it is the resume marker.
CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR, name VARCHAR, config VARCHAR, config_hash VARCHAR, seed BIGINT,
    perspective VARCHAR, socium_version VARCHAR, python_version VARCHAR, duckdb_version VARCHAR,
    created_at TIMESTAMP, input_digests VARCHAR, event_loop VARCHAR
);
CREATE TABLE IF NOT EXISTS agents (
    agent_id BIGINT, name VARCHAR, username VARCHAR, bio VARCHAR, interests VARCHAR[],
    stance DOUBLE, goal VARCHAR, activity FLOAT[]
);
CREATE TABLE IF NOT EXISTS follow_events (step INTEGER, seq INTEGER, src BIGINT, dst BIGINT, event TINYINT);
CREATE TABLE IF NOT EXISTS posts (
    post_id BIGINT, step INTEGER, time_s DOUBLE, author BIGINT, kind VARCHAR, parent_id BIGINT,
    root_id BIGINT, content VARCHAR, truncated BOOLEAN, sanitized BOOLEAN
);
CREATE TABLE IF NOT EXISTS actions (
    step INTEGER, agent_id BIGINT, seq INTEGER, origin VARCHAR, type VARCHAR, args VARCHAR,
    outcome VARCHAR, reason VARCHAR, post_id BIGINT, rationale VARCHAR
);
-- Added later (an LLM agent's stated reason, llm_agents.record_reason): traces written before it gain the column.
ALTER TABLE actions ADD COLUMN IF NOT EXISTS rationale VARCHAR;
CREATE TABLE IF NOT EXISTS exposures (step INTEGER, agent_id BIGINT, post_id BIGINT, rank SMALLINT, source VARCHAR);
CREATE TABLE IF NOT EXISTS stances (step INTEGER, agent_id BIGINT, stance DOUBLE);
CREATE TABLE IF NOT EXISTS groups (group_id BIGINT, step INTEGER, creator BIGINT, name VARCHAR);
CREATE TABLE IF NOT EXISTS group_messages (step INTEGER, seq INTEGER, group_id BIGINT, agent_id BIGINT, content VARCHAR);
CREATE TABLE IF NOT EXISTS surveys (step INTEGER, agent_id BIGINT, question VARCHAR, answer VARCHAR, value DOUBLE, reason VARCHAR);
ALTER TABLE surveys ADD COLUMN IF NOT EXISTS reason VARCHAR;  -- traces written before the column existed
-- Typed outcome of each answer: ok (the only value a mean uses), inconsistent (its words contradict its number),
-- degenerate (no words, no number), invalid, backend_error, no_stance; stated_value: the number the agent gave,
-- also when rejected (value is then NULL). Traces written before these columns read them as NULL.
ALTER TABLE surveys ADD COLUMN IF NOT EXISTS outcome VARCHAR;
ALTER TABLE surveys ADD COLUMN IF NOT EXISTS stated_value DOUBLE;
-- group_llm runs: each agent's persona cluster (written with step 0).
CREATE TABLE IF NOT EXISTS agent_clusters (agent_id BIGINT, cluster INTEGER, cluster_size BIGINT);
-- How each in-process model engine ran (llm.backend embedded: engine, model file, n_threads, n_parallel
-- as chosen, not as asked: threads follow the machine's load when the engine starts), one row per engine
-- started, in the transaction of the step it first served (a resumed run or each Ray actor adds its own).
CREATE TABLE IF NOT EXISTS llm_engines (step INTEGER, llm VARCHAR, engine VARCHAR);
-- llm_agents.memory.kind = stream: every memory entry (observations, own actions, messages, reflections).
CREATE TABLE IF NOT EXISTS memories (step INTEGER, agent_id BIGINT, seq INTEGER, kind VARCHAR, text VARCHAR,
                                     importance DOUBLE, ref_post_id BIGINT);
-- Questions put to LLM agents during or after the run (config `interviews`, Simulation.interview, `socium interview --record`).
CREATE TABLE IF NOT EXISTS interviews (
    step INTEGER, agent_id BIGINT, question VARCHAR, answer VARCHAR, call_id BIGINT, origin VARCHAR
);
-- Agents joining mid-run (population.join_schedule, or Simulation.step(sign_up=...)); resume replays them.
CREATE TABLE IF NOT EXISTS sign_ups (step INTEGER, agent_id BIGINT, origin VARCHAR);
-- Intervention layer (socium.moderation): ground truth of posts (only those with one), agents' roles
-- (only non-ordinary ones, written with step 0), and what moderation did, per step in its transaction.
CREATE TABLE IF NOT EXISTS post_veracity (post_id BIGINT, veracity VARCHAR);
CREATE TABLE IF NOT EXISTS agent_roles (agent_id BIGINT, role VARCHAR);
CREATE TABLE IF NOT EXISTS moderation_events (
    step INTEGER, seq INTEGER, event VARCHAR, post_id BIGINT, agent_id BIGINT, source VARCHAR, detail VARCHAR
);
-- steps.wall_s: real seconds from the previous commit (or the start of the session) to this one, so
-- sum(wall_s) is the run's real wall time, set-up, model loading and resumes included.
CREATE TABLE IF NOT EXISTS steps (
    step INTEGER PRIMARY KEY, sim_time_s DOUBLE, n_active INTEGER, n_actions INTEGER, n_posts INTEGER,
    n_exposures INTEGER, wall_s DOUBLE, committed_at TIMESTAMP
);
-- Added later: the real date and time a step stands for (start_datetime + sim_time_s); null without start_datetime.
ALTER TABLE steps ADD COLUMN IF NOT EXISTS sim_datetime TIMESTAMP;

-- Derived views: analysis is SQL over the trace, so any run can be re-analysed without re-running.
CREATE OR REPLACE VIEW follows AS
SELECT src, dst, step AS start_step, end_step FROM (
    SELECT src, dst, step, event,
           lead(step) OVER (PARTITION BY src, dst ORDER BY step, seq) AS end_step
    FROM follow_events
) WHERE event = 1;

-- votes (every accepted vote or undo as a +1 / -1 delta on its target): generated from the action table
-- (socium.trace.store.votes_view_sql) and appended there, so a new vote action needs no SQL.

CREATE OR REPLACE VIEW cascade_nodes AS
WITH RECURSIVE t(post_id, root_id, author, step, depth) AS (
    SELECT post_id, post_id, author, step, 0 FROM posts WHERE kind = 'original'
    UNION ALL
    SELECT p.post_id, t.root_id, p.author, p.step, t.depth + 1
    FROM posts p JOIN t ON p.parent_id = t.post_id
    WHERE p.kind IN ('repost', 'quote')
)
SELECT * FROM t;

-- size (nodes incl. root), depth and max breadth (most nodes on one level) of every cascade at every
-- committed step from its start on.
CREATE OR REPLACE VIEW cascade_metrics AS
WITH lvl AS (SELECT root_id, depth, step, count(*) AS n FROM cascade_nodes GROUP BY ALL),
starts AS (SELECT root_id, min(step) AS s0 FROM cascade_nodes GROUP BY root_id),
grid AS (SELECT r.root_id, s.step FROM starts r JOIN steps s ON s.step >= r.s0),
cum AS (
    SELECT g.root_id, g.step, l.depth, sum(l.n) AS n
    FROM grid g JOIN lvl l ON l.root_id = g.root_id AND l.step <= g.step
    GROUP BY ALL
)
SELECT root_id, step, CAST(sum(n) AS BIGINT) AS size, max(depth) AS depth, CAST(max(n) AS BIGINT) AS max_breadth
FROM cum GROUP BY root_id, step;
