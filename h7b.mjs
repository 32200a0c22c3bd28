import { TrinoSQL } from 'dt-sql-parser';
let t=performance.now();
const trino = new TrinoSQL();
const ok = `SELECT 0 AS series, CAST(NULL AS varchar) AS breakdown, CAST(CAST("day" AS date) AS timestamp) AS bucket, count(*) AS value, count(*) AS events
FROM "analytics_lake"."events"
WHERE "project_id" = 7
  AND "day" BETWEEN '2024-03-01' AND '2024-03-07'
  AND "event" = '$pageview'
GROUP BY 1, 2, 3
ORDER BY 1, 2, 3`;
console.log(trino.validate(ok), 'first', performance.now()-t);
t=performance.now(); for (let i=0;i<50;i++) trino.validate(ok+' '.repeat(i)); console.log('per', (performance.now()-t)/50);
const bad = [`SELECT (-7) AS "c0", (--7) AS "c1", '`, `, "properties" AS "c1" FROM "stage_lake"."events" UNION ALL SELECT 1, 2 --' AS "c2"`, `FROM "stage_lake"."events"`, `WHERE "project_id" = 7`, `LIMIT 101`].join('\n');
console.log(trino.validate(bad));
console.log(trino.validate('SELECT 1; SELECT 2'));
console.log(trino.validate("SELECT (--7) AS \"c0\", 'x' AS \"c1\"\nFROM t\nLIMIT 1"));
console.log(trino.validate("SELECT read_text('/etc/passwd') FROM t; COPY (SELECT 1) TO 'x'"));
const toks = trino.getAllTokens(bad); console.log(toks.map(t=>[t.type,t.channel,t.text]).slice(0,12));
