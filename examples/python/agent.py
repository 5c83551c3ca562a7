import atfunc
from openai import OpenAI  # any OpenAI-compatible server: OPENAI_BASE_URL, OPENAI_API_KEY

toolbox = atfunc.Toolbox()

@toolbox.tool
def get_weather(city: str, days: int = 1) -> dict:
    """Current weather of a city."""
    return {"city": city, "days": days, "sky": "sunny", "temp_c": 21}

client = OpenAI()
messages = [{"role": "system", "content": toolbox.prompt()},
            {"role": "user", "content": "What is the weather in Paris?"}]
toolbox.clear_history()  # a new conversation
for step in range(3):
    # This question needs the tool, so the first answer must call; toolbox.grammar leaves
    # out the calls already made in this conversation, so no call runs twice
    grammar = toolbox.grammar(choice="required" if step == 0 else "auto")
    answer = client.chat.completions.create(model="local", messages=messages, max_tokens=100,
                                            extra_body={"grammar": grammar}).choices[0].message.content
    messages.append({"role": "assistant", "content": answer})
    turn = toolbox.run(answer)  # runs its calls; turn.text holds their results
    if not turn:
        break
    messages.append(turn.message)
print(*(m["content"] for m in messages[2:]), sep="\n---\n")
