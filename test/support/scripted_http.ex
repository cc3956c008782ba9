defmodule ExZarr.Test.ScriptedHTTP do
  @moduledoc """
  A tiny HTTP server that stands in for an object store in retry tests: it answers each
  connection with the next scripted response and reports every request to the test process
  as `{:request, method, path, headers, body}` (header names in lowercase).

  A response is `{status, headers, body}`, `{:raw, iodata}` to send these bytes as they are
  (a hand-written answer) and close, `:reset` to drop the connection unanswered, or
  `:silence` to say nothing until the client gives up (closes the connection, or 10 s pass).

      endpoint = ExZarr.Test.ScriptedHTTP.serve([{503, [], ""}, {200, [], "data"}])
      # ... point a store at endpoint ...
      [{"GET", "/b/k", _, _}, {"GET", "/b/k", _, _}] = ExZarr.Test.ScriptedHTTP.requests()
  """

  @doc """
  Starts the server (linked to the caller) and returns its `http://127.0.0.1:port`. The
  responses can be given as a function of that endpoint (for answers that point back to it).
  """
  @spec serve([response] | (String.t() -> [response])) :: String.t()
        when response:
               {non_neg_integer(), [{String.t(), String.t()}], binary()}
               | {:raw, iodata()}
               | :reset
               | :silence
  def serve(responses) do
    test = self()

    {:ok, listen} =
      :gen_tcp.listen(0, [:binary, ip: {127, 0, 0, 1}, active: false, reuseaddr: true])

    {:ok, port} = :inet.port(listen)
    endpoint = "http://127.0.0.1:#{port}"
    responses = if is_function(responses, 1), do: responses.(endpoint), else: responses
    spawn_link(fn -> Enum.each(responses, &answer(listen, test, &1)) end)
    endpoint
  end

  defp answer(listen, test, response) do
    {:ok, socket} = :gen_tcp.accept(listen)
    {:ok, head, rest} = read_head(socket, "")
    [request_line | header_lines] = String.split(head, "\r\n", trim: true)
    [method, path, _version] = String.split(request_line, " ")

    headers =
      for line <- header_lines do
        [name, value] = String.split(line, ":", parts: 2)
        {String.downcase(name), String.trim(value)}
      end

    length = headers |> List.keyfind("content-length", 0, {nil, "0"}) |> elem(1)
    {:ok, body} = read_body(socket, rest, String.to_integer(length))
    send(test, {:request, method, path, Map.new(headers), body})

    case response do
      :reset ->
        :gen_tcp.shutdown(socket, :read_write)

      :silence ->
        :gen_tcp.recv(socket, 0, 10_000)

      {:raw, bytes} ->
        :gen_tcp.send(socket, bytes)

      {status, resp_headers, resp_body} ->
        lines = for {k, v} <- resp_headers, do: "#{k}: #{v}\r\n"

        :gen_tcp.send(socket, [
          "HTTP/1.1 #{status} X\r\nContent-Length: #{byte_size(resp_body)}\r\n",
          lines,
          "Connection: close\r\n\r\n",
          resp_body
        ])
    end

    :gen_tcp.close(socket)
  end

  defp read_head(socket, acc) do
    case String.split(acc, "\r\n\r\n", parts: 2) do
      [head, rest] ->
        {:ok, head, rest}

      [_] ->
        with {:ok, data} <- :gen_tcp.recv(socket, 0, 5_000), do: read_head(socket, acc <> data)
    end
  end

  defp read_body(_socket, acc, length) when byte_size(acc) >= length, do: {:ok, acc}

  defp read_body(socket, acc, length) do
    with {:ok, data} <- :gen_tcp.recv(socket, 0, 5_000),
         do: read_body(socket, acc <> data, length)
  end

  @doc "The requests reported so far, as `{method, path, headers, body}`, oldest first."
  @spec requests() :: [{String.t(), String.t(), map(), binary()}]
  def requests do
    receive do
      {:request, method, path, headers, body} -> [{method, path, headers, body} | requests()]
    after
      100 -> []
    end
  end
end
