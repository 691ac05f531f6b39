-- Deployments keep the plan they were made with (docs/architecture.md#changing-a-plan): a
-- deployment's spec carries "plan", the plan's spec, placement and generation when it was
-- added. Plans could not change before this migration, so every deployment already added was
-- made with its plan as it is now.
UPDATE deployments SET spec = json_set(spec, '$.plan', json((
  SELECT json_set(p.spec,
                  '$.placement', json_object('max_per_node', p.max_per_node,
                                             'bin_pack', json(CASE p.bin_pack WHEN 0 THEN 'false' ELSE 'true' END)),
                  '$.generation', p.generation)
  FROM plans p WHERE p.id = deployments.plan_id)))
WHERE json_type(spec, '$.plan') IS NULL;
