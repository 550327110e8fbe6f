"""The memory console: a few server-rendered pages under `/console` where an operator (or a
tenant, for its own memory) looks at what a tenant's memory holds and what pre_turn would
pack, and at the consumer groups' lag and the dead letters (docs/integrations.md#memory-console).

* `login` — signing in with the API's credentials, the login cookie, same-origin posts;
* `html` — escaping, the page frame, the stylesheet;
* `views`, `reports` — the pages' HTML from the memory service's answers;
* `routes` — the routes.
"""

from services.gateway.console.routes import ConsoleKafka, router

__all__ = ["ConsoleKafka", "router"]
