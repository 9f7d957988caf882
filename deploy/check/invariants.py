#!/usr/bin/env python3
"""Deployment invariants the schemas cannot express (run by scripts/validate-deploy.sh).

  invariants.py k8s BUILT.yaml [EXTRA.yaml...]   kustomize output (+ example pods)
  invariants.py compose compose.yaml
  invariants.py compose-host compose.host.yaml
  invariants.py tiles-s3 tiles-secrets.example.yaml|s3.json...

The tile store (SeaweedFS) is checked in all three: the registry's --tiles-s3-* settings
name the tile store's service and S3 port, the bucket is the one that is created, the S3
key comes from a secret, and nothing but the S3 port leaves the tile store's loopback.
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
                if e["name"] in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
                    need("secretKeyRef" in e.get("valueFrom", {}),
                         f"{cn}: {e['name']} not from a Secret (secretKeyRef)")
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
    check_k8s_tiles(by_kind, pols)
    deps = {d["metadata"]["name"]: d for d in by_kind.get("Deployment", [])}
    for h in by_kind.get("HorizontalPodAutoscaler", []):
        need(h["spec"]["scaleTargetRef"]["name"] in deps, "HPA targets no Deployment")
    for pdb in by_kind.get("PodDisruptionBudget", []):
        sel = pdb["spec"]["selector"]["matchLabels"]
        need(any(sel.items() <= d["spec"]["template"]["metadata"]["labels"].items()
                 for d in deps.values()), "PDB selects no Deployment")
    print(f"{len(objs)} objects checked")


def weed_flag(args, name, default=None):
    """The value of SeaweedFS flag -NAME=V in a command line (as strings)."""
    for a in args:
        a = str(a)
        if a.startswith(f"-{name}=") or a.startswith(f"--{name}="):
            return a.split("=", 1)[1]
    return default


def env_of(container):
    return {e["name"]: e for e in container.get("env", [])}


def check_k8s_tiles(by_kind, pols):
    """The tile store: its StatefulSet, the Service the registry's tile flags name, the
    bucket the registry publishes to and init-bucket creates, and who may connect."""
    sets = {s["metadata"]["name"]: s for s in by_kind.get("StatefulSet", [])}
    tiles, reg = sets.get("dgsp-tiles"), sets.get("dgsp-registry")
    need(tiles is not None, "no tile store StatefulSet dgsp-tiles")
    if not (tiles and reg):
        return
    need(tiles["spec"]["replicas"] == 1, "the tile store (a single-node SeaweedFS) must have one replica")
    need(tiles["spec"].get("volumeClaimTemplates"), "the tile store has no volume claim")
    tspec = tiles["spec"]["template"]["spec"]
    weed = tspec["containers"][0]
    args = weed.get("command", []) + weed.get("args", [])
    need("server" in args and "-s3" in args, "the tile store does not run `weed server -s3`")
    s3_port = int(weed_flag(args, "s3.port", 8333))
    need(weed_flag(args, "ip.bind") == "127.0.0.1",
         "the tile store's master, volume and filer do not listen on loopback only (-ip.bind)")
    need(weed_flag(args, "master.telemetry") == "false", "the tile store reports telemetry")
    need(str(weed.get("image", "")).startswith("chrislusf/seaweedfs:")
         and not str(weed["image"]).endswith(":latest"),
         f"the tile store image is not a pinned chrislusf/seaweedfs: {weed.get('image')}")
    cfg = weed_flag(args, "s3.config")
    mounts = {m["mountPath"].rstrip("/") + "/": m["name"] for m in weed.get("volumeMounts", [])}
    vols = {v["name"]: v for v in tspec.get("volumes", [])}
    cfg_vol = next((vols.get(n) for p, n in mounts.items() if cfg and cfg.startswith(p)), None)
    need(cfg_vol is not None and "secret" in cfg_vol, "the tile store's -s3.config is not read from a Secret")
    tlabels = tiles["spec"]["template"]["metadata"]["labels"]
    services = {s["metadata"]["name"]: s for s in by_kind.get("Service", [])}
    rspec = reg["spec"]["template"]["spec"]
    bucket = None
    for c in rspec.get("initContainers", []) + rspec["containers"]:
        env = env_of(c)
        if "DGSP_TILES_S3_ENDPOINT" not in env:
            continue
        cn = f"StatefulSet/dgsp-registry/{c['name']}"
        url = env["DGSP_TILES_S3_ENDPOINT"].get("value", "")
        host, _, port = url.removeprefix("http://").partition(":")
        svc = services.get(host)
        need(svc is not None, f"{cn}: DGSP_TILES_S3_ENDPOINT {url} names no Service")
        if svc:
            need(svc["spec"]["selector"].items() <= tlabels.items(),
                 f"{cn}: Service {host} does not select the tile store's pods")
            target = [p for p in svc["spec"]["ports"] if str(p["port"]) == port]
            need(target and target[0].get("targetPort") in ("s3", s3_port),
                 f"{cn}: {url} does not reach the tile store's S3 port {s3_port}")
        b = env.get("DGSP_TILES_S3_BUCKET", {}).get("value")
        need(b, f"{cn}: no DGSP_TILES_S3_BUCKET")
        need(bucket in (None, b), f"{cn}: bucket {b}, another container uses {bucket}")
        bucket = bucket or b
        for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            need(k in env, f"{cn}: no {k} for the tile store")
    regc = next(c for c in rspec["containers"] if c["name"] == "registry")
    need("DGSP_TILES_S3_BUCKET" in env_of(regc), "the registry does not publish tiles to the tile store")
    need(env_of(regc).get("DGSP_JOURNAL", {}).get("value", "auto") in ("on", "auto"),
         "the registry does not keep its journal in the tile store (DGSP_JOURNAL)")
    need(any(c["command"][:2] == ["dgsp-tiles", "init-bucket"] for c in rspec.get("initContainers", [])),
         "no initContainer creates the tile store's bucket")
    tp = pols.get("dgsp-tiles")
    need(tp is not None, "no NetworkPolicy for the tile store")
    if tp:
        allowed = [f for rule in tp["spec"].get("ingress", []) for f in rule.get("from", [])]
        need(allowed and all("namespaceSelector" not in f and f.get("podSelector", {}).get("matchLabels") in (
                 {"app.kubernetes.io/name": "dgsp-registry"}, {"dgsp-role": "tiles-reader"},
                 {"dgsp-role": "operator"}) for f in allowed),
             "the tile store admits peers other than the registry, tiles readers and operators")
        need(tp["spec"].get("egress") == [], "the tile store may make connections")
    rp = pols.get("dgsp-registry")
    if rp:
        for rule in rp["spec"].get("egress", []):
            for t in rule.get("to", []):
                ok = (t.get("podSelector", {}).get("matchLabels") == {"app.kubernetes.io/name": "dgsp-tiles"}
                      and all(p["port"] == s3_port for p in rule.get("ports", [])) and rule.get("ports")) \
                    or (t.get("namespaceSelector", {}).get("matchLabels")
                        == {"kubernetes.io/metadata.name": "kube-system"}
                        and all(p["port"] == 53 for p in rule.get("ports", [])))
                need(ok, f"the registry may connect to something else than the tile store and DNS: {t}")


def check_compose_tiles(services, host):
    """The tile store in a compose file: the registry's tile flags point at the `tiles`
    service's S3 port, the bucket is the one tiles-init creates, credentials come from
    secret files, and the S3 port stays on loopback."""
    tiles, init, reg = services.get("tiles"), services.get("tiles-init"), services.get("registry")
    need(tiles is not None and init is not None, "no tiles / tiles-init service (the tile store)")
    if not (tiles and init and reg):
        return
    args = [str(a) for a in tiles.get("entrypoint", []) + tiles.get("command", [])]
    need("server" in args and "-s3" in args, "tiles does not run `weed server -s3`")
    image = str(tiles.get("image", ""))
    need("chrislusf/seaweedfs:" in image and ":latest" not in image,
         f"tiles: the default image is not a pinned chrislusf/seaweedfs: {image}")
    need(weed_flag(args, "ip.bind") == "127.0.0.1", "tiles: master, volume and filer not on loopback (-ip.bind)")
    need(weed_flag(args, "master.telemetry") == "false", "tiles reports telemetry")
    s3_port = weed_flag(args, "s3.port", "8333")
    need(weed_flag(args, "s3.config", "").startswith("/run/secrets/"), "tiles: -s3.config is not a secret")
    need("tiles-data:/data" in tiles.get("volumes", []), "tiles: no persistent volume on /data")
    if host:
        need(weed_flag(args, "s3.ip.bind") == "127.0.0.1", "tiles: the S3 port is not on loopback")
        want = f"http://127.0.0.1:{s3_port}"
    else:
        for p in tiles.get("ports", []):
            need(str(p).startswith("127.0.0.1:") and str(p).endswith(":8333"),
                 f"tiles publishes {p}: loopback only, to the S3 port")
        want = f"http://tiles:{s3_port}"
        shared = set(tiles.get("networks", [])) & set(reg.get("networks", [])) & set(init.get("networks", []))
        need(shared, "the registry, tiles-init and tiles share no network")
    renv, ienv = reg.get("environment", {}), init.get("environment", {})
    need(renv.get("DGSP_TILES_S3_ENDPOINT") == want,
         f"registry: DGSP_TILES_S3_ENDPOINT {renv.get('DGSP_TILES_S3_ENDPOINT')} is not the tiles service ({want})")
    need(ienv.get("DGSP_TILES_S3_ENDPOINT") == want, f"tiles-init: DGSP_TILES_S3_ENDPOINT is not {want}")
    need(renv.get("DGSP_TILES_S3_BUCKET") and renv.get("DGSP_TILES_S3_BUCKET") == ienv.get("DGSP_TILES_S3_BUCKET"),
         "the registry's bucket is not the one tiles-init creates")
    need(init.get("command", [])[:2] == ["dgsp-tiles", "init-bucket"], "tiles-init does not create the bucket")
    need(reg.get("command", [])[:3] == ["dgsp-tiles", "exec", "dgsp-registry"],
         "the registry does not get its S3 key through dgsp-tiles exec")
    need(init.get("depends_on", {}).get("tiles", {}).get("condition") == "service_healthy",
         "tiles-init does not wait for a healthy tiles")
    need(reg.get("depends_on", {}).get("tiles-init", {}).get("condition") == "service_completed_successfully",
         "the registry does not wait for the bucket")
    need(renv.get("DGSP_JOURNAL", "auto") in ("on", "auto", "${DGSP_JOURNAL:-on}", "${DGSP_JOURNAL:-auto}"),
         f"registry: DGSP_JOURNAL={renv.get('DGSP_JOURNAL')}: the log would not be kept in the tile store")
    for name, s in (("registry", reg), ("tiles-init", init)):
        env = s.get("environment", {})
        for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            need(k not in env, f"{name}: {k} in the environment (give {k}_FILE, a secret)")
            need(str(env.get(f"{k}_FILE", "")).startswith("/run/secrets/"), f"{name}: {k}_FILE is not a secret")


def check_tiles_s3(paths):
    """SeaweedFS's S3 identities (-s3.config), from the Kubernetes Secret template or a file
    make-secrets.sh wrote: the registry's key is limited to its bucket, and anonymous
    clients may read only the public objects (checkpoint, tile/, snapshot/), never the
    journal and lease under private/."""
    import json
    for p in paths:
        doc = open(p).read()
        if p.endswith((".yaml", ".yml")):
            doc = yaml.safe_load(doc)["stringData"]["s3.json"]
        ids = {i["name"]: i for i in json.loads(doc)["identities"]}
        reg, anon = ids.get("dgsp-registry"), ids.get("anonymous")
        need(reg is not None, f"{p}: no dgsp-registry identity")
        if reg:
            need(reg.get("credentials"), f"{p}: dgsp-registry has no key")
            need(all(":" in a for a in reg["actions"]),
                 f"{p}: dgsp-registry has actions beyond its bucket: {reg['actions']}")
        if anon:
            for a in anon.get("actions", []):
                kind, _, path = a.partition(":")
                bucket, _, rest = path.partition("/")
                ok = kind == "Read" and bucket and any(
                    rest.endswith(t) for t in ("checkpoint*", "tile/*", "snapshot/*"))
                need(ok and "private" not in rest,
                     f"{p}: anonymous may {a}: only Read of checkpoint*, tile/*, snapshot/*")
    print(f"{len(paths)} S3 configurations checked")


def check_compose(path):
    c = yaml.safe_load(open(path))
    services, networks = c["services"], c.get("networks", {})
    for name, s in services.items():
        for p in s.get("ports", []):
            if name in ("registry", "tiles"):
                need(str(p).startswith("127.0.0.1:"), f"{name} port {p} is not on loopback")
            else:
                need(name == "lb", f"{name} publishes {p}: only the load balancer may")
    need(networks.get("feed", {}).get("internal") is True, "the feed network is not internal")
    need(networks.get("tiles", {}).get("internal") is True, "the tiles network is not internal")
    check_compose_tiles(services, host=False)
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
        oneshot = s.get("restart") == "no"
        if not oneshot and "healthcheck" not in s and name not in ("lb", "manager"):
            need(False, f"{name}: no healthcheck")
        if name in ("registry", "gateway-a", "gateway-b", "lb", "tiles", "tiles-init"):
            need(s.get("read_only") is True, f"{name}: root filesystem not read-only")
            need(s.get("cap_drop") == ["ALL"], f"{name}: capabilities not dropped")
    check_compose_tiles(services, host=True)
    cfg = open(path.replace("compose.host.yaml", "haproxy.host.cfg")).read().splitlines()
    servers = [l.split()[2].strip('"') for l in cfg if l.split()[:1] == ["server"]]
    need(servers and all(s.startswith("127.0.0.1:${DGSP_GATEWAY_") for s in servers),
         f"haproxy.host.cfg routes to something else than the gateways' loopback ports: {servers}")
    print(f"{len(services)} services checked")


if __name__ == "__main__":
    if sys.argv[1] == "k8s":
        check_k8s(sys.argv[2:])
    elif sys.argv[1] == "tiles-s3":
        check_tiles_s3(sys.argv[2:])
    elif sys.argv[1] == "compose-host":
        check_compose_host(sys.argv[2])
    else:
        check_compose(sys.argv[2])
    for e in errors:
        print("violation:", e)
    sys.exit(1 if errors else 0)
