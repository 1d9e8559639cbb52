"""CloudWatch: ``AWS::CloudWatch::Alarm``, single-metric or metric math (moto has no handler for it)."""

from __future__ import annotations

from typing import Any, Self

from moto.cloudwatch.models import Dimension, Metric, MetricDataQuery, MetricStat, cloudwatch_backends
from moto.core.common_models import CloudFormationModel

from jobqueues.emulator.cfn.handler import Handler


def _metric_data_query(query: dict[str, Any]) -> MetricDataQuery:
    """One entry of an alarm's ``Metrics`` as moto's model (what its PutMetricAlarm API builds)."""
    stat = query.get("MetricStat")
    metric_stat = None
    if stat:
        metric = stat["Metric"]
        metric_stat = MetricStat(
            metric=Metric(
                metric_name=metric["MetricName"],
                namespace=metric["Namespace"],
                dimensions=[Dimension(d["Name"], d["Value"]) for d in metric.get("Dimensions", [])],
            ),
            period=stat["Period"],
            stat=stat["Stat"],
            unit=stat.get("Unit"),
        )
    return MetricDataQuery(
        query_id=query["Id"],
        label=query.get("Label"),  # type: ignore[arg-type]
        period=query.get("Period"),  # type: ignore[arg-type]
        return_data=query.get("ReturnData", True),
        expression=query.get("Expression"),
        metric_stat=metric_stat,
    )


class CloudWatchAlarm(Handler, CloudFormationModel):
    """``AWS::CloudWatch::Alarm``, single-metric or metric math (``Metrics``), via ``put_metric_alarm``."""

    cfn_type = "AWS::CloudWatch::Alarm"
    name_property = "AlarmName"
    cfn_attributes = frozenset({"Arn"})

    @classmethod
    def create(cls, name: str, properties: dict[str, Any], account_id: str, region_name: str) -> Self:
        p = properties
        queries = [_metric_data_query(q) for q in p["Metrics"]] if "Metrics" in p else None
        cloudwatch_backends[account_id][region_name].put_metric_alarm(
            name=name,
            namespace=p.get("Namespace"),  # type: ignore[arg-type]
            metric_name=p.get("MetricName"),  # type: ignore[arg-type]
            metric_data_queries=queries,
            comparison_operator=p["ComparisonOperator"],
            evaluation_periods=int(p["EvaluationPeriods"]),
            period=int(p["Period"]) if "Period" in p else None,  # type: ignore[arg-type]
            threshold=float(p["Threshold"]) if "Threshold" in p else None,  # type: ignore[arg-type]
            threshold_metric_id=p.get("ThresholdMetricId"),
            statistic=p.get("Statistic"),  # type: ignore[arg-type]
            extended_statistic=p.get("ExtendedStatistic"),
            description=p.get("AlarmDescription", ""),
            dimensions=[{"Name": d["Name"], "Value": d["Value"]} for d in p.get("Dimensions", [])],
            alarm_actions=p.get("AlarmActions", []),
            ok_actions=p.get("OKActions", []),
            insufficient_data_actions=p.get("InsufficientDataActions", []),
            datapoints_to_alarm=p.get("DatapointsToAlarm"),
            unit=p.get("Unit"),
            actions_enabled=p.get("ActionsEnabled", True),
            treat_missing_data=p.get("TreatMissingData"),
            evaluate_low_sample_count_percentile=p.get("EvaluateLowSampleCountPercentile"),
        )
        return cls(name, properties, account_id, region_name)

    def delete(self, account_id: str, region_name: str) -> None:
        cloudwatch_backends[account_id][region_name].delete_alarms([self.name])

    def attribute(self, name: str) -> str:
        return f"arn:aws:cloudwatch:{self.region_name}:{self.account_id}:alarm:{self.name}"
