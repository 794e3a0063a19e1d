"""routectl-aws: the ``aws`` route provider (EC2 VPC route tables, like cloud-provider-aws).

Install it beside routectl and select it with ``--provider aws``. Options
(``--provider-option key=value``): ``region`` (else ``AWS_REGION``/``AWS_DEFAULT_REGION``),
``vpc-id``, ``endpoint-url`` (else ``AWS_ENDPOINT_URL_EC2``/``AWS_ENDPOINT_URL``),
``cache-seconds`` (30), ``route-table-id`` (that table only, whatever its tags: the CCM's
``RouteTableID``) and ``cluster-id`` (the tags' cluster id, legacy ``KubernetesCluster`` tag
too: the CCM's ``KubernetesClusterID``/``KubernetesClusterTag``) and ``role-arn`` (the role
assumed with STS to sign EC2 calls: the CCM's ``RoleARN``). Credentials come from the
standard AWS chain (``sts:AssumeRole`` on the role, with ``role-arn``). The IAM permissions
needed: ``ec2:DescribeRouteTables``, ``ec2:DescribeInstances``, ``ec2:CreateRoute``,
``ec2:ReplaceRoute``, ``ec2:DeleteRoute``, ``ec2:ModifyInstanceAttribute``.
"""

from __future__ import annotations

from routectl.provider import ProviderFactory
from routectl_aws.provider import AwsProvider

__all__ = ["AwsProvider"]

_: ProviderFactory = AwsProvider  # mypy proves the class fits routectl's contract
