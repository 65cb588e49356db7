# Two commands do everything: `make dev` runs the service locally, `make test` runs every test.
# Both install what they need first.

.PHONY: dev test build setup eval

dev:
	@scripts/dev.sh

test:
	@scripts/test.sh

build:
	@scripts/build.sh

setup:
	@scripts/setup.sh test

# Retrieval quality on a fixed corpus; see Evaluation in README.md.
eval:
	@scripts/eval.sh
