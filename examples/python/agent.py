import atfunc
from openai import OpenAI  # any OpenAI-compatible server: OPENAI_BASE_URL, OPENAI_API_KEY

toolbox = atfunc.Toolbox()

@toolbox.tool
def get_weather(city: str, days: int = 1) -> dict:
    """Current weather of a city."""
    return {"city": city, "days": days, "sky": "sunny", "temp_c": 21}

client = OpenAI()

def ask(messages, grammar, max_tokens=100):
    return client.chat.completions.create(model="local", messages=messages, max_tokens=max_tokens,
                                          extra_body={"grammar": grammar}).choices[0].message.content

def decide(messages):  # a call is never forced: the model first names a tool, or none
    names = toolbox.tools.names
    question = {"role": "user", "content": "Which function answers the last message? Write its name, or none."}
    name = ask(messages + [question], "root ::= " + " | ".join(f'"{n}"' for n in names + ["none"]), 8)
    return name if name in names else "auto"

messages = [{"role": "system", "content": toolbox.prompt()},
            {"role": "user", "content": "What is the weather in Paris?"}]
toolbox.clear_history()  # a new conversation
for step in range(3):
    # toolbox.grammar leaves out the calls already made in this conversation: no repeats
    answer = ask(messages, toolbox.grammar(choice=decide(messages) if step == 0 else "auto"))
    messages.append({"role": "assistant", "content": answer})
    turn = toolbox.run(answer)  # runs its calls; turn.text holds their results
    if not turn:
        break
    messages.append(turn.message)
print(*(m["content"] for m in messages[2:]), sep="\n---\n")
