#!/usr/bin/python3
"""The Git benches' repository (bench/git.sh, bench/git_reconcile.py): n Deployment manifests
of about 2 KB, apps/app-I/deployment.yaml, as a real repository's would read.
As a command: manifests.py ROOT N writes them with every file marked for policy apps:app-I."""
import os
import sys

MANIFEST = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-{i}
  namespace: apps
  labels:
    app.kubernetes.io/name: app-{i}
    app.kubernetes.io/part-of: shop
    team: team-{t}
  annotations:
    deployment.kubernetes.io/revision: "12"
spec:
  replicas: 3
  revisionHistoryLimit: 5
  selector:
    matchLabels:
      app.kubernetes.io/name: app-{i}
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxSurge: 25%
      maxUnavailable: 0
  template:
    metadata:
      labels:
        app.kubernetes.io/name: app-{i}
        team: team-{t}
    spec:
      serviceAccountName: app-{i}
      securityContext:
        runAsNonRoot: true
        seccompProfile:
          type: RuntimeDefault
      containers:
        - name: app
          image: {image}:1.0.0{marker}
          imagePullPolicy: IfNotPresent
          args: ["--port=8080", "--log-format=json"]
          ports:
            - name: http
              containerPort: 8080
          env:
            - name: APP_NAME
              value: app-{i}
            - name: OTEL_EXPORTER_OTLP_ENDPOINT
              value: http://otel-collector.observability:4317
          resources:
            requests:
              cpu: 100m
              memory: 128Mi
            limits:
              memory: 256Mi
          readinessProbe:
            httpGet:
              path: /healthz
              port: http
            periodSeconds: 10
          livenessProbe:
            httpGet:
              path: /livez
              port: http
            initialDelaySeconds: 10
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities:
              drop: ["ALL"]
"""


def marked(i):
    """The default: every file's image marked for its own policy apps:app-I."""
    return ("registry.example.com/team-%d/app-%d" % (i % 20, i),
            ' # {"$imagepolicy": "apps:app-%d"}' % i)


def write(root, n, image_marker=marked):
    """Writes the n manifests under root; image_marker(i) gives file i's (image, marker)."""
    for i in range(n):
        d = os.path.join(root, "apps", "app-%d" % i)
        os.makedirs(d, exist_ok=True)
        image, marker = image_marker(i)
        with open(os.path.join(d, "deployment.yaml"), "w") as f:
            f.write(MANIFEST.format(i=i, t=i % 20, image=image, marker=marker))


if __name__ == "__main__":
    write(sys.argv[1], int(sys.argv[2]))
