#!/usr/bin/env python3
"""Deployment invariants the schemas cannot express (run by scripts/validate-deploy.sh).

  invariants.py k8s BUILT.yaml [EXTRA.yaml...]   kustomize output (+ example pods)
  invariants.py compose compose.yaml
  invariants.py compose-host compose.host.yaml
"""
import sys

import yaml

errors = []


def need(cond, msg):
    if not cond:
        errors.append(msg)


def pod_spec(obj):
    if obj["kind"] == "Pod":
        return obj["spec"]
    if obj["kind"] in ("Deployment", "StatefulSet", "DaemonSet", "Job"):
        return obj["spec"]["template"]["spec"]
    return None


def check_k8s(paths):
    objs = [o for p in paths for o in yaml.safe_load_all(open(p)) if o]
    by_kind = {}
    for o in objs:
        by_kind.setdefault(o["kind"], []).append(o)
    for o in objs:
        spec = pod_spec(o)
        if spec is None:
            continue
        name = f"{o['kind']}/{o['metadata']['name']}"
        psc = spec.get("securityContext", {})
        need(psc.get("runAsNonRoot") is True, f"{name}: runAsNonRoot")
        need(psc.get("seccompProfile", {}).get("type") == "RuntimeDefault", f"{name}: seccomp")
        need(spec.get("automountServiceAccountToken") is False, f"{name}: service account token mounted")
        for c in spec.get("initContainers", []) + spec["containers"]:
            cn = f"{name}/{c['name']}"
            sc = c.get("securityContext", {})
            need(sc.get("readOnlyRootFilesystem") is True, f"{cn}: readOnlyRootFilesystem")
            need(sc.get("allowPrivilegeEscalation") is False, f"{cn}: allowPrivilegeEscalation")
            need(sc.get("capabilities", {}).get("drop") == ["ALL"], f"{cn}: capabilities not dropped")
            need("limits" in c.get("resources", {}), f"{cn}: no resource limits")
            for e in c.get("env", []):
                need(not ("value" in e and ("TOKEN" in e["name"] or "PASSPHRASE" in e["name"])
                          and not e["name"].endswith("_FILE")),
                     f"{cn}: secret {e['name']} given as a literal value")
        # Secret files reach dgsp through a private copy: a Secret volume's files are
        # symbolic links, and group-readable once fsGroup is set, both of which dgsp refuses.
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        for v in volumes.values():
            if "secret" in v:
                need(v["secret"].get("defaultMode") == 0o400,
                     f"{name}: secret volume {v['name']} has no defaultMode 0400")
        for c in spec.get("initContainers", []) + spec["containers"]:
            mounts = [(m["mountPath"].rstrip("/") + "/", volumes.get(m["name"], {}))
                      for m in c.get("volumeMounts", [])]
            for e in c.get("env", []):
                if not (e["name"].endswith("_FILE") and "value" in e
                        and ("TOKEN" in e["name"] or "PASSPHRASE" in e["name"])):
                    continue
                vols = [v for path, v in mounts if e["value"].startswith(path)]
                need(vols and vols[-1].get("emptyDir", {}).get("medium") == "Memory",
                     f"{name}/{c['name']}: {e['name']} is not read from a private in-memory copy")
        if o["kind"] in ("Deployment", "StatefulSet"):
            for c in spec["containers"]:
                cn = f"{name}/{c['name']}"
                need(c.get("livenessProbe", {}).get("httpGet", {}).get("path") == "/healthz",
                     f"{cn}: liveness probe is not /healthz")
                need(c.get("readinessProbe", {}).get("httpGet", {}).get("path") == "/readyz",
                     f"{cn}: readiness probe is not /readyz")
    for s in by_kind.get("StatefulSet", []):
        if s["metadata"]["name"] == "dgsp-registry":
            need(s["spec"]["replicas"] == 1, "the registry must have exactly one replica")
            need(s["spec"].get("volumeClaimTemplates"), "the registry has no volume claim")
    for s in by_kind.get("Service", []):
        need(s["spec"].get("type", "ClusterIP") == "ClusterIP",
             f"Service/{s['metadata']['name']} is exposed outside the cluster")
    for ing in by_kind.get("Ingress", []):
        for rule in ing["spec"].get("rules", []):
            for p in rule.get("http", {}).get("paths", []):
                svc = p["backend"]["service"]["name"]
                need(svc == "dgsp-gateway", f"Ingress routes {p['path']} to {svc}")
                need(not p["path"].startswith(("/admin", "/metrics")), f"Ingress exposes {p['path']}")
    pols = {p["metadata"]["name"]: p for p in by_kind.get("NetworkPolicy", [])}
    need("default-deny" in pols and pols["default-deny"]["spec"]["podSelector"] == {},
         "no default-deny NetworkPolicy")
    reg = pols.get("dgsp-registry")
    need(reg is not None, "no NetworkPolicy for the registry")
    if reg:
        allowed = [f for rule in reg["spec"].get("ingress", []) for f in rule.get("from", [])]
        need(all(f.get("podSelector", {}).get("matchLabels") in (
                 {"app.kubernetes.io/name": "dgsp-gateway"}, {"dgsp-role": "operator"})
                 and "namespaceSelector" not in f for f in allowed) and allowed,
             "the registry admits peers other than gateways and operators")
    deps = {d["metadata"]["name"]: d for d in by_kind.get("Deployment", [])}
    for h in by_kind.get("HorizontalPodAutoscaler", []):
        need(h["spec"]["scaleTargetRef"]["name"] in deps, "HPA targets no Deployment")
    for pdb in by_kind.get("PodDisruptionBudget", []):
        sel = pdb["spec"]["selector"]["matchLabels"]
        need(any(sel.items() <= d["spec"]["template"]["metadata"]["labels"].items()
                 for d in deps.values()), "PDB selects no Deployment")
    print(f"{len(objs)} objects checked")


def check_compose(path):
    c = yaml.safe_load(open(path))
    services, networks = c["services"], c.get("networks", {})
    for name, s in services.items():
        for p in s.get("ports", []):
            if name == "registry":
                need(str(p).startswith("127.0.0.1:"), f"registry port {p} is not on loopback")
            else:
                need(name == "lb", f"{name} publishes {p}: only the load balancer may")
    need(networks.get("feed", {}).get("internal") is True, "the feed network is not internal")
    need("feed" not in services["lb"].get("networks", []), "the load balancer joins the feed network")
    cfg = open(path.replace("compose.yaml", "haproxy.cfg")).read().splitlines()
    servers = [l.split()[2] for l in cfg if l.split()[:1] == ["server"]]
    need(servers and all(s.startswith("gateway-") for s in servers),
         f"haproxy routes to something else than the gateways: {servers}")
    for name, s in services.items():
        env = s.get("environment", {})
        for k, v in env.items():
            need(not (("TOKEN" in k or "PASSPHRASE" in k) and not k.endswith("_FILE")),
                 f"{name}: secret {k} in the environment")
    print(f"{len(services)} services checked")


def check_compose_host(path):
    """The host-network variant: no container networks, so loopback bindings are what keep
    the registry (admin API) and the gateways private; HAProxy is the only other listener."""
    c = yaml.safe_load(open(path))
    services = c["services"]
    need(not c.get("networks"), "compose.host.yaml declares container networks")
    for name, s in services.items():
        need(s.get("network_mode") in ("host", "none"), f"{name}: network_mode is not host or none")
        need(not s.get("ports") and not s.get("networks"), f"{name}: ports or networks with host networking")
        env = s.get("environment", {})
        for k, v in env.items():
            need(not (("TOKEN" in k or "PASSPHRASE" in k) and not k.endswith("_FILE")),
                 f"{name}: secret {k} in the environment")
            if k in ("DGSP_LISTEN", "DGSP_GATEWAY_LISTEN"):
                need(str(v).startswith("127.0.0.1:"), f"{name}: {k}={v} is not on loopback")
        if name != "registry-init" and "healthcheck" not in s and name not in ("lb", "manager"):
            need(False, f"{name}: no healthcheck")
        if name in ("registry", "gateway-a", "gateway-b", "lb"):
            need(s.get("read_only") is True, f"{name}: root filesystem not read-only")
            need(s.get("cap_drop") == ["ALL"], f"{name}: capabilities not dropped")
    cfg = open(path.replace("compose.host.yaml", "haproxy.host.cfg")).read().splitlines()
    servers = [l.split()[2].strip('"') for l in cfg if l.split()[:1] == ["server"]]
    need(servers and all(s.startswith("127.0.0.1:${DGSP_GATEWAY_") for s in servers),
         f"haproxy.host.cfg routes to something else than the gateways' loopback ports: {servers}")
    print(f"{len(services)} services checked")


if __name__ == "__main__":
    if sys.argv[1] == "k8s":
        check_k8s(sys.argv[2:])
    elif sys.argv[1] == "compose-host":
        check_compose_host(sys.argv[2])
    else:
        check_compose(sys.argv[2])
    for e in errors:
        print("violation:", e)
    sys.exit(1 if errors else 0)
