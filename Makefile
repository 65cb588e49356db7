# Two commands do everything: `make dev` runs the service locally, `make test` runs every test.
# Both install what they need first.

.PHONY: dev test build setup deploy eval bench bench-knowledge bench-stream bench-hybrid

dev:
	@scripts/dev.sh

test:
	@scripts/test.sh

build:
	@scripts/build.sh

setup:
	@scripts/setup.sh test

# Everything Cloudflare needs, created when missing, then the Worker deployed (after
# `npx wrangler login`). `make deploy DRY_RUN=1` shows each step's command without an account.
deploy:
	@scripts/deploy.sh

# Retrieval quality on a fixed corpus; see Evaluation in README.md.
eval:
	@scripts/eval.sh

# Every benchmark against its baseline and goals; writes bench-output/bench.json and bench.png.
bench:
	@scripts/bench.sh

# Search latency at 1k/10k/100k chunks and ingestion MB/s; writes bench-output/knowledge.json.
bench-knowledge:
	@scripts/bench-knowledge.sh

# Time to first byte and token rate through the Worker next to the model server read directly.
bench-stream:
	@scripts/bench-stream.sh

# Search by words and meaning at 1k/10k/100k chunks against a local embedding server with a fixed
# delay; writes bench-output/hybrid.json.
bench-hybrid:
	@scripts/bench-hybrid.sh
