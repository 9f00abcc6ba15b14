"""Framework adapters: s3spill's tools and after-tool hook in each framework's own types.

One module per framework, each importing its framework (an optional extra) and nothing
else does: ``s3spill.adapters.pydantic_ai`` (``s3spill[pydantic-ai]``),
``s3spill.adapters.langchain`` (``s3spill[langchain]``), ``s3spill.adapters.openai_agents``
(``s3spill[openai-agents]``) and ``s3spill.adapters.claude_agent_sdk``
(``s3spill[claude-agent-sdk]``). Each gives the model ``read_artifact``/``grep_artifact``
bound to the harness's session, and a hook that passes every other tool's result
through the Spiller; both run the blocking store work on worker threads
(:mod:`s3spill.spill.aio`, :mod:`s3spill.agent.aio`).
"""
