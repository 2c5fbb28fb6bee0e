# anvil's MCP server in a container: Streamable HTTP by default, stdio with --stdio.
#
#   docker build -t anvil .
#   docker run --rm anvil --help                       # every tool and variable; exits at once
#   docker run --rm -p 8765:8765 -v "$PWD:/project" -e ANVIL_TOKEN anvil
#   docker run --rm -i -v "$PWD:/project" anvil --stdio
#
# The project is bind-mounted at /project and keeps its state there (.anvil/, the local layout);
# nothing is baked into the image. Run with --user "$(id -u):$(id -g)" when the mounted project is
# not writable by the image's user (uid 10001).
FROM python:3.12.8-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN useradd --create-home --uid 10001 --user-group --shell /usr/sbin/nologin anvil

# Which build this is (describe_surface reports it; the build context holds no .git): pass
# --build-arg ANVIL_BUILD_COMMIT=$(git rev-parse HEAD) and, for a release, ANVIL_BUILD_TAG=vX.Y.Z.
# Left empty, the image says it does not know (null), never a guess.
ARG ANVIL_BUILD_COMMIT=""
ARG ANVIL_BUILD_TAG=""
WORKDIR /opt/anvil
COPY pyproject.toml setup.py README.md ./
COPY anvil ./anvil
# With the PostgreSQL driver (the postgres extra): ANVIL_DATABASE_URL serves a team's shared database.
RUN pip install --no-compile ".[postgres]" && rm -rf /opt/anvil/build /opt/anvil/*.egg-info

# The served project: mounted here, state kept in it. The bearer token is read from ANVIL_TOKEN
# (named by --token-env below; never put the token on the command line).
ENV ANVIL_ROOT=/project \
    ANVIL_STATE_LAYOUT=local
RUN mkdir -p /project && chown anvil:anvil /project
WORKDIR /project
USER anvil

EXPOSE 8765
ENTRYPOINT ["anvil", "serve"]
CMD ["--http", "--host", "0.0.0.0", "--port", "8765", "--token-env", "ANVIL_TOKEN"]
