"""The Kubernetes objects fmcluster generates for SageMaker HyperPod on EKS, and the CloudFormation properties of its
task governance: pure functions of explicit inputs (compute groups, teams, the file system's ID, DNS name and mount
name, or CloudFormation tokens for them), deterministic, with no Kubernetes client and no AWS call.

- :mod:`.nodes`: a compute group as Kubernetes sees it (labels, taints, GPUs and EFA interfaces per node from the
  catalog) and how a pod lands on it (node selector, tolerations, resource limits).
- :mod:`.governance`: ``AWS::SageMaker::ClusterSchedulerConfig`` and one ``AWS::SageMaker::ComputeQuota`` per team.
- :mod:`.volumes`: FSx for Lustre as a static PersistentVolume and a claim per namespace.
- :mod:`.jobs`: the acceptance jobs (nccl-tests as an MPIJob, the node checks as a Job) and the first training job
  (a PyTorchJob running ``torchrun``).

Objects are plain dicts in the shape ``kubectl apply`` takes; :func:`.jobs.to_yaml` writes them.
"""
