"""The policy document: read, validated and composed into named policies.

The reader every section uses, the sections, the composed `Policy`, and the policy's own choices
for one Pod (its workload class, its usage statistic, its in-place windows).
"""
