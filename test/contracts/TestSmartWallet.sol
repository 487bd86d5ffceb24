// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC1271} from "@openzeppelin/contracts/interfaces/IERC1271.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {MessageHashUtils} from "@openzeppelin/contracts/utils/cryptography/MessageHashUtils.sol";

/// The smallest contract wallet that signs like real ones (Safe, Coinbase Smart Wallet): ERC-1271 accepts a
/// signature over the hash when its single owner (an EOA) made it.
contract TestSmartWallet is IERC1271 {
    address public immutable owner;
    uint256 public nonce;

    constructor(address owner_) {
        owner = owner_;
    }

    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4) {
        (address signer, ECDSA.RecoverError err,) = ECDSA.tryRecover(hash, signature);
        return err == ECDSA.RecoverError.NoError && signer == owner ? IERC1271.isValidSignature.selector : bytes4(0xffffffff);
    }

    function execute(address to, uint256 value, bytes calldata data) external returns (bytes memory) {
        require(msg.sender == owner, "not owner");
        (bool ok, bytes memory ret) = to.call{value: value}(data);
        require(ok, "call failed");
        return ret;
    }

    /// A batch of calls from the wallet (a Safe's MultiSend, an ERC-4337 account's executeBatch), by its owner.
    function executeBatch(address[] calldata to, bytes[] calldata data) external {
        require(msg.sender == owner, "not owner");
        for (uint256 i = 0; i < to.length; i++) {
            (bool ok, ) = to[i].call(data[i]);
            require(ok, "call failed");
        }
    }

    /// What a Safe's `execTransaction` or an ERC-4337 account does: anyone may submit a call its owner signed
    /// (EIP-191 over wallet, chain, nonce and the call). The wallet reads its arguments and ignores trailing bytes.
    function executeSigned(address to, uint256 value, bytes calldata data, bytes calldata signature) external returns (bytes memory) {
        bytes32 digest = keccak256(abi.encode(address(this), block.chainid, nonce, to, value, keccak256(data)));
        require(ECDSA.recover(MessageHashUtils.toEthSignedMessageHash(digest), signature) == owner, "not signed by owner");
        nonce++;
        (bool ok, bytes memory ret) = to.call{value: value}(data);
        require(ok, "call failed");
        return ret;
    }

    receive() external payable {}
}

/// CREATE2 factory, so a wallet has an address before it exists: what ERC-6492 counterfactual signatures name.
contract TestSmartWalletFactory {
    function deploy(address owner, bytes32 salt) external returns (address wallet) {
        wallet = predict(owner, salt);
        if (wallet.code.length == 0) new TestSmartWallet{salt: salt}(owner);
    }

    function predict(address owner, bytes32 salt) public view returns (address) {
        bytes32 codeHash = keccak256(abi.encodePacked(type(TestSmartWallet).creationCode, abi.encode(owner)));
        return address(uint160(uint256(keccak256(abi.encodePacked(bytes1(0xff), address(this), salt, codeHash)))));
    }
}

/// A bundler's entry point (an ERC-4337 EntryPoint, a relayer's multicall): runs the calls in order. Whoever calls
/// it writes all of them: calls of its own beside a wallet's signed one.
contract TestBundler {
    struct Call {
        address to;
        bytes data;
    }

    function run(Call[] calldata calls) external {
        for (uint256 i = 0; i < calls.length; i++) {
            (bool ok,) = calls[i].to.call(calls[i].data);
            require(ok, "call failed");
        }
    }
}

/// What an EIP-7702 delegate does (the code an EOA runs once it delegates): ERC-1271 accepts a signature by the
/// account's own key. `init` stands for a delegate's setup call (an ERC-8010 wrapper may carry one): it records a
/// guardian the check then also accepts.
contract TestEoaDelegate is IERC1271 {
    address public guardian;

    function init(address guardian_) external {
        guardian = guardian_;
    }

    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4) {
        (address signer, ECDSA.RecoverError err,) = ECDSA.tryRecover(hash, signature);
        bool ok = err == ECDSA.RecoverError.NoError && (signer == address(this) || (guardian != address(0) && signer == guardian));
        return ok ? IERC1271.isValidSignature.selector : bytes4(0xffffffff);
    }
}
