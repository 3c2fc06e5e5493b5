"""Whole-request error responses: the response of a controller API with one error everywhere."""

from __future__ import annotations

from typing import Any

from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import alter_partition_response as apr
from kraftwire.protocol.messages import alter_user_scram_credentials_response as aur
from kraftwire.protocol.messages import create_acls_response as car
from kraftwire.protocol.messages import create_partitions_response as cpr
from kraftwire.protocol.messages import create_topics_response as ctr
from kraftwire.protocol.messages import delete_acls_response as dar
from kraftwire.protocol.messages import delete_topics_response as dtr
from kraftwire.protocol.messages import describe_configs_response as dcr
from kraftwire.protocol.messages import describe_user_scram_credentials_response as dur
from kraftwire.protocol.messages import elect_leaders_response as elr
from kraftwire.protocol.messages import incremental_alter_configs_response as iacr
from kraftwire.protocol.messages.allocate_producer_ids_response import AllocateProducerIdsResponse
from kraftwire.protocol.messages.alter_configs_response import (
    AlterConfigsResourceResponse,
    AlterConfigsResponse,
)
from kraftwire.protocol.messages.broker_heartbeat_response import BrokerHeartbeatResponse
from kraftwire.protocol.messages.broker_registration_response import BrokerRegistrationResponse
from kraftwire.protocol.messages.controller_registration_response import ControllerRegistrationResponse
from kraftwire.protocol.messages.describe_acls_response import DescribeAclsResponse
from kraftwire.protocol.messages.unregister_broker_response import UnregisterBrokerResponse
from kraftwire.protocol.messages.update_features_response import (
    UpdatableFeatureResult,
    UpdateFeaturesResponse,
)


def error_response(request: Any, code: Errors, message: str | None, version: int) -> Any:
    """The response to ``request`` failing as a whole with ``code``."""
    c = int(code)
    name = type(request).__name__
    if name == "BrokerRegistrationRequest":
        return BrokerRegistrationResponse(error_code=c)
    if name == "BrokerHeartbeatRequest":
        return BrokerHeartbeatResponse(error_code=c)
    if name == "UnregisterBrokerRequest":
        return UnregisterBrokerResponse(error_code=c, error_message=message)
    if name == "ControllerRegistrationRequest":
        return ControllerRegistrationResponse(error_code=c, error_message=message)
    if name == "AllocateProducerIdsRequest":
        return AllocateProducerIdsResponse(error_code=c)
    if name == "AlterPartitionRequest":
        return apr.AlterPartitionResponse(error_code=c)
    if name == "DescribeAclsRequest":
        return DescribeAclsResponse(error_code=c, error_message=message)
    if name == "UpdateFeaturesRequest":
        return UpdateFeaturesResponse(error_code=c, error_message=message, results=[
            UpdatableFeatureResult(u.feature, c, message) for u in request.feature_updates])
    if name == "ElectLeadersRequest":
        if version == 0:    # v0 has no top-level error: every requested partition carries it
            return elr.ElectLeadersResponse(replica_election_results=[elr.ReplicaElectionResult(
                t.topic, [elr.PartitionResult(p, c, message) for p in t.partitions])
                for t in request.topic_partitions or []])
        return elr.ElectLeadersResponse(error_code=c)
    if name == "CreateTopicsRequest":
        return ctr.CreateTopicsResponse(topics=[
            ctr.CreatableTopicResult(name=t.name, error_code=c, error_message=message)
            for t in request.topics])
    if name == "DeleteTopicsRequest":
        if version >= 6:
            res = [dtr.DeletableTopicResult(name=t.name, topic_id=t.topic_id, error_code=c,
                                            error_message=message) for t in request.topics]
        else:
            res = [dtr.DeletableTopicResult(name=n, error_code=c) for n in request.topic_names]
        return dtr.DeleteTopicsResponse(responses=res)
    if name == "CreatePartitionsRequest":
        return cpr.CreatePartitionsResponse(results=[
            cpr.CreatePartitionsTopicResult(t.name, c, message) for t in request.topics])
    if name == "DescribeConfigsRequest":
        return dcr.DescribeConfigsResponse(results=[
            dcr.DescribeConfigsResult(c, message, r.resource_type, r.resource_name, [])
            for r in request.resources])
    if name == "AlterConfigsRequest":
        return AlterConfigsResponse(responses=[
            AlterConfigsResourceResponse(c, message, r.resource_type, r.resource_name)
            for r in request.resources])
    if name == "IncrementalAlterConfigsRequest":
        return iacr.IncrementalAlterConfigsResponse(responses=[
            iacr.AlterConfigsResourceResponse(c, message, r.resource_type, r.resource_name)
            for r in request.resources])
    if name == "CreateAclsRequest":
        return car.CreateAclsResponse(results=[car.AclCreationResult(c, message) for _ in request.creations])
    if name == "DeleteAclsRequest":
        return dar.DeleteAclsResponse(filter_results=[
            dar.DeleteAclsFilterResult(c, message, []) for _ in request.filters])
    if name == "AlterUserScramCredentialsRequest":
        users = dict.fromkeys([d.name for d in request.deletions] + [u.name for u in request.upsertions])
        return aur.AlterUserScramCredentialsResponse(results=[
            aur.AlterUserScramCredentialsResult(u, c, message) for u in users])
    if name == "DescribeUserScramCredentialsRequest":
        return dur.DescribeUserScramCredentialsResponse(error_code=c, error_message=message, results=[
            dur.DescribeUserScramCredentialsResult(u.name, c, message, []) for u in request.users or ()])
    raise ValueError(f"no error response for {name}")
