from typing import Any

import atfunc
from openai import OpenAI  # llama.cpp's server (reads "grammar"): OPENAI_BASE_URL, OPENAI_API_KEY

toolbox = atfunc.Toolbox(timeout=10)  # a call that hangs fails after 10 s; the loop goes on

@toolbox.tool
def get_weather(city: str, days: int = 1) -> dict[str, Any]:
    """Current weather of a city."""
    return {"city": city, "days": days, "sky": "sunny", "temp_c": 21}

@toolbox.tool
def reply(text: str) -> str:
    """Answer the user in words, when no other tool is needed (a greeting, a thank-you, small talk)."""
    return text

client = OpenAI()

def ask(question: str) -> str:
    messages: list[Any] = [{"role": "system", "content": toolbox.prompt()},
                           {"role": "user", "content": question}]
    toolbox.clear_history()  # a new conversation
    for _ in range(4):
        # Every answer is calls only: `reply` to talk, the other tools to act; the grammar
        # leaves out the calls already made in this conversation, so no call runs twice
        grammar = toolbox.grammar(choice="required", lead_in=0)
        answer = client.chat.completions.create(
            model="local", messages=messages, max_tokens=100, temperature=0,
            extra_body={"grammar": grammar}).choices[0].message.content or ""
        messages.append({"role": "assistant", "content": answer})
        turn = toolbox.run(answer)  # runs its calls; turn.text holds their results
        said = [r["result"] for r in turn.results if r["name"] == "reply" and "result" in r]
        if said:
            return str(said[0])
        messages.append(turn.message)
    return "(no reply)"

for question in ["Hello!", "What is the weather in Paris?"]:
    print(f"> {question}\n{ask(question)}")
